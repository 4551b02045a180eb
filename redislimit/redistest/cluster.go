package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of masters on loopback, each serving an equal
// share of the 16 384 slots, with no replicas. The masters keep serving
// their slots while another is down (cluster-require-full-coverage no),
// as a Cluster that must stay partly available is set up; a node killed
// and restarted (Server.Restart) comes back with its slots, from its
// nodes.conf.
type Cluster struct {
	Servers []*Server

	mu    sync.Mutex
	owner [slots]int // the index in Servers of each slot's master
}

const slots = 16384

// Addrs returns the nodes' addresses.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		addrs[i] = s.Addr
	}
	return addrs
}

// Close kills every node.
func (c *Cluster) Close() {
	for _, s := range c.Servers {
		s.Close()
	}
}

// StartCluster starts n nodes with their files in dir, gives each its
// share of the slots, introduces them to each other and waits until every
// node reports the cluster ok.
func StartCluster(dir string, n int) (*Cluster, error) {
	if n < 1 {
		return nil, errors.New("redistest: a cluster needs a node")
	}
	c := &Cluster{}
	for i := range n {
		node := filepath.Join(dir, "node"+strconv.Itoa(i))
		if err := os.MkdirAll(node, 0o755); err != nil {
			c.Close()
			return nil, err
		}
		s, err := start(node, func(port int) []string {
			return []string{"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(node, "nodes.conf"), "--cluster-node-timeout", "5000",
				"--cluster-require-full-coverage", "no"}
		})
		if err != nil {
			c.Close()
			return nil, err
		}
		c.Servers = append(c.Servers, s)
	}
	ctx := context.Background()
	clients := make([]*redis.Client, n)
	for i, s := range c.Servers {
		clients[i] = s.NewClient()
		defer clients[i].Close()
	}
	for i, cl := range clients {
		lo, hi := i*slots/n, (i+1)*slots/n-1
		args := []any{"CLUSTER", "ADDSLOTS"}
		for slot := lo; slot <= hi; slot++ {
			args = append(args, slot)
			c.owner[slot] = i
		}
		if err := cl.Do(ctx, args...).Err(); err != nil {
			c.Close()
			return nil, fmt.Errorf("redistest: CLUSTER ADDSLOTS: %w", err)
		}
	}
	for _, s := range c.Servers[1:] {
		host, port, _ := strings.Cut(s.Addr, ":")
		if err := clients[0].Do(ctx, "CLUSTER", "MEET", host, port).Err(); err != nil {
			c.Close()
			return nil, fmt.Errorf("redistest: CLUSTER MEET: %w", err)
		}
	}
	// The nodes gossip until each knows every slot's owner: poll for it,
	// as redis-cli --cluster create does.
	deadline := time.Now().Add(startTimeout)
	for _, cl := range clients {
		for {
			info, err := cl.ClusterInfo(ctx).Result()
			// Every slot: with cluster-require-full-coverage no a node says
			// ok before it has learnt the others' slots.
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(n)) &&
				strings.Contains(info, "cluster_slots_ok:"+strconv.Itoa(slots)) {
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				return nil, fmt.Errorf("redistest: cluster not ok after %v: %s", startTimeout, info)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return c, nil
}

// TestCluster starts a cluster of n nodes for t, like Test.
func TestCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c, err := StartCluster(t.TempDir(), n)
	if errors.Is(err, ErrNotFound) && os.Getenv("CI") == "" {
		t.Skip("redis-server not found on PATH: install it (apt-get install redis-server) to run this test")
	}
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}
