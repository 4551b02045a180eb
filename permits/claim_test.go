package permits_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluicehq/sluice/permits"
)

type countingReleaser struct{ n int }

func (c *countingReleaser) ReleasePermit(permits.Permit) { c.n++ }

func TestClaimEndsAPermitOnceWithoutItsOwner(t *testing.T) {
	owner := &countingReleaser{}
	p := permits.NewPermit(1, owner, nil)
	cp := p
	assert.True(t, p.Claim())
	assert.False(t, cp.Claim(), "a copy of a claimed permit")
	cp.Release()
	assert.Equal(t, 0, owner.n, "Claim does not call the owner, and a claimed permit does not release")
}

func TestClaimFailsAfterRelease(t *testing.T) {
	owner := &countingReleaser{}
	p := permits.NewPermit(1, owner, nil)
	p.Release()
	assert.False(t, p.Claim())
	assert.Equal(t, 1, owner.n)
}

func TestClaimOfAPermitWithoutOwnerFails(t *testing.T) {
	assert.False(t, permits.NewPermit(1, nil, nil).Claim())
	assert.False(t, permits.Permit{}.Claim())
}
