// A Go channel worker pool running coretune's `bench spawn` workload, for
// scripts/bench-pool.sh: GOMAXPROCS worker goroutines receive closures from one
// buffered channel; each closure decrements a shared atomic counter, and the one that
// brings it to zero closes a channel the main goroutine waits on. Time runs from the
// first send until the main goroutine wakes; the workers are started before.
//
//	go run gopool.go -items 10000000 -workers 2
//
// prints one line: "<ns per item> ns/item".
package main

import (
	"flag"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
)

func main() {
	items := flag.Int("items", 10_000_000, "work items")
	workers := flag.Int("workers", 2, "worker goroutines (and GOMAXPROCS)")
	flag.Parse()
	runtime.GOMAXPROCS(*workers)

	tasks := make(chan func(), 1024)
	for i := 0; i < *workers; i++ {
		go func() {
			for task := range tasks {
				task()
			}
		}()
	}
	var remaining atomic.Int64
	remaining.Store(int64(*items))
	done := make(chan struct{})
	item := func() {
		if remaining.Add(-1) == 0 {
			close(done)
		}
	}
	start := time.Now()
	for i := 0; i < *items; i++ {
		tasks <- item
	}
	<-done
	elapsed := time.Since(start)
	close(tasks)
	if remaining.Load() != 0 {
		panic("items lost")
	}
	fmt.Printf("%.2f ns/item\n", float64(elapsed.Nanoseconds())/float64(*items))
}
