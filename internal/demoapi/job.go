package demoapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/httplimit"
)

// Job is one unit of work of the demos, a completion request, and what
// happened to it. Its fields are exported so that a process can send its
// jobs' records to another as JSON.
type Job struct {
	ID                int
	Prompt, MaxTokens int64 // the estimate is their sum
	Start             time.Time
	FirstSent, Sent   time.Time // the first attempt, and the last one (the one that succeeded, if done)
	Attempts          int
	Used              int64
	Done              bool
}

// Estimate is what the API charges the job on arrival: prompt + max_tokens.
func (j *Job) Estimate() int64 { return j.Prompt + j.MaxTokens }

// Jobs returns n jobs with IDs 0 to n-1 and estimates spread evenly over
// [minTokens, maxTokens], the same for the same seed, a third of each the
// prompt.
func Jobs(n int, minTokens, maxTokens int64, seed uint64) []*Job {
	rng := rand.New(rand.NewPCG(seed, 1))
	jobs := make([]*Job, n)
	for i := range jobs {
		estimate := minTokens + rng.Int64N(maxTokens-minTokens+1)
		prompt := estimate / 3
		jobs[i] = &Job{ID: i, Prompt: prompt, MaxTokens: estimate - prompt}
	}
	return jobs
}

// Run does the job: one request to url through client, whose Transport
// waits, retries and settles, with the job's estimate as its cost. It
// records the start, and on success the tokens used; it returns an error
// when the job was not done.
func (j *Job) Run(ctx context.Context, client *http.Client, url string) error {
	j.Start = time.Now()
	body, _ := json.Marshal(CompletionRequest{PromptTokens: j.Prompt, MaxTokens: j.MaxTokens})
	req, err := http.NewRequestWithContext(httplimit.ContextWithCost(ctx, j.Estimate()), http.MethodPost, url+"/v1/complete", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Job-Id", strconv.Itoa(j.ID))
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	var out CompletionResponse
	err = json.NewDecoder(resp.Body).Decode(&out)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("job %d: %s", j.ID, resp.Status)
	}
	if err != nil {
		return errors.Join(fmt.Errorf("job %d: the answer", j.ID), err)
	}
	j.Done, j.Used = true, out.Usage.TotalTokens
	return nil
}

// Usage is the Transport's settle function: the tokens the API says the
// request used; a refusal used none.
func Usage(resp *http.Response) (int64, bool) {
	if resp.StatusCode != http.StatusOK {
		return 0, true
	}
	n, err := strconv.ParseInt(resp.Header.Get("X-Usage-Tokens"), 10, 64)
	return n, err == nil && n >= 0
}

// Recorder is a Transport's base that notes when each job's attempts are
// sent, then sends them through Base. RoundTrip runs in the job's
// goroutine, so each job is written by its own goroutine only; Jobs is
// only read.
type Recorder struct {
	Base http.RoundTripper
	Jobs map[int]*Job // by ID
}

// RoundTrip records the attempt of the job named by X-Job-Id and sends it.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if id, err := strconv.Atoi(req.Header.Get("X-Job-Id")); err == nil {
		if j, ok := r.Jobs[id]; ok {
			j.Sent = time.Now()
			if j.Attempts++; j.Attempts == 1 {
				j.FirstSent = j.Sent
			}
		}
	}
	return r.Base.RoundTrip(req)
}

// ByID indexes jobs by their IDs, for a Recorder.
func ByID(jobs []*Job) map[int]*Job {
	m := make(map[int]*Job, len(jobs))
	for _, j := range jobs {
		m[j.ID] = j
	}
	return m
}

// Overtakes counts the pairs of sent jobs where one was sent slack or more
// ahead of one that had started slack or more before it: 0 when the jobs
// were served in FIFO order, up to slack.
func Overtakes(jobs []*Job, slack time.Duration) int {
	var sent []*Job
	for _, j := range jobs {
		if !j.FirstSent.IsZero() {
			sent = append(sent, j)
		}
	}
	n := 0
	for _, a := range sent {
		for _, b := range sent {
			if b.Start.Sub(a.Start) >= slack && a.FirstSent.Sub(b.FirstSent) >= slack {
				n++
			}
		}
	}
	return n
}

// Binding names the quota that held the jobs back, the one the client
// used the most of, from the shares QuotaUse returns.
func Binding(tokens, requests float64) string {
	if requests > tokens {
		return fmt.Sprintf("the request quota: %.0f%% of it used, %.0f%% of the token quota", 100*requests, 100*tokens)
	}
	return fmt.Sprintf("the token quota: %.0f%% of it used, %.0f%% of the request quota", 100*tokens, 100*requests)
}

// Tally counts the jobs done and not done, and returns the p50 and p99 of
// the waits of those done: from a job's start to the send that succeeded.
func Tally(jobs []*Job) (done, failed int, p50, p99 time.Duration) {
	var waits []time.Duration
	for _, j := range jobs {
		if j.Done {
			done++
			waits = append(waits, j.Sent.Sub(j.Start))
		} else {
			failed++
		}
	}
	return done, failed, Percentile(waits, 50), Percentile(waits, 99)
}
