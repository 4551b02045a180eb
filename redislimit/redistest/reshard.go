package redistest

import (
	"context"
	"fmt"
	"strings"
)

// Owner returns the index in c.Servers of the master that serves slot,
// as StartCluster and MoveSlot assigned it.
func (c *Cluster) Owner(slot int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.owner[slot]
}

// MoveSlot moves slot, and the keys in it, to the master c.Servers[to],
// as redis-cli --cluster reshard does: the target imports the slot, the
// source migrates it (from then on it answers ASK for keys it no longer
// holds), MIGRATE moves the keys a few at a time, and every master is
// told the new owner (the source then answers MOVED). Clients that sent
// to the source meanwhile are redirected; none sees the slot unserved.
// Moving a slot to its owner does nothing. One move at a time.
func (c *Cluster) MoveSlot(slot, to int) error {
	from := c.Owner(slot)
	if from == to {
		return nil
	}
	ctx := context.Background()
	src, dst := c.Servers[from].NewClient(), c.Servers[to].NewClient()
	defer src.Close()
	defer dst.Close()
	srcID, err := src.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		return fmt.Errorf("redistest: CLUSTER MYID: %w", err)
	}
	dstID, err := dst.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		return fmt.Errorf("redistest: CLUSTER MYID: %w", err)
	}
	if err := dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID).Err(); err != nil {
		return fmt.Errorf("redistest: SETSLOT IMPORTING: %w", err)
	}
	if err := src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID).Err(); err != nil {
		return fmt.Errorf("redistest: SETSLOT MIGRATING: %w", err)
	}
	host, port, _ := strings.Cut(c.Servers[to].Addr, ":")
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, slot, 10).Result()
		if err != nil {
			return fmt.Errorf("redistest: GETKEYSINSLOT: %w", err)
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		if err := src.Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("redistest: MIGRATE: %w", err)
		}
	}
	// The target first, then the source, then the others, as
	// redis-cli does: the slot is never without an owner that knows it.
	order := []int{to, from}
	for i := range c.Servers {
		if i != to && i != from {
			order = append(order, i)
		}
	}
	for _, i := range order {
		cl := c.Servers[i].NewClient()
		err := cl.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err()
		cl.Close()
		if err != nil {
			return fmt.Errorf("redistest: SETSLOT NODE: %w", err)
		}
	}
	c.mu.Lock()
	c.owner[slot] = to
	c.mu.Unlock()
	return nil
}
