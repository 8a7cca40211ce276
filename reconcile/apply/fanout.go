package apply

import "sync"

// DefaultConcurrency is how many objects an Applier or a Differ works on at once when
// its Concurrency is not set (the git sweep has its own, gitops.DefaultConcurrency).
const DefaultConcurrency = 4

// FanOut calls do(i) for every i in [0, n), at most limit at a time (DefaultConcurrency when
// limit ≤ 0), and returns when all calls have returned. Calls are independent: one that
// fails records its own result at index i and never stops the others, so callers write
// do's outcome into a slice they own, one element per index.
func FanOut(n, limit int, do func(i int)) {
	if limit <= 0 {
		limit = DefaultConcurrency
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			do(i)
		}()
	}
	wg.Wait()
}
