// A Go channel worker pool running coretune's `bench spawn` workload, for
// scripts/bench-pool.sh: GOMAXPROCS worker goroutines receive closures from one
// buffered channel; each closure decrements a shared atomic counter, and the one that
// brings it to zero closes a channel the main goroutine waits on. Time runs from the
// first send until the main goroutine wakes; the workers are started before.
//
//	go run gopool.go -items 10000000 -workers 2
//
// prints one line: "<ns per item> ns/item <CPU ns per item> cpu-ns/item <voluntary>
// <involuntary> cs": wall time per item, the process's user + system CPU time per item over
// the same span, and its voluntary and involuntary context switches (getrusage).
package main

import (
	"flag"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
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
	var before, after syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &before); err != nil {
		panic(err)
	}
	start := time.Now()
	for i := 0; i < *items; i++ {
		tasks <- item
	}
	<-done
	elapsed := time.Since(start)
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &after); err != nil {
		panic(err)
	}
	close(tasks)
	if remaining.Load() != 0 {
		panic("items lost")
	}
	cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	fmt.Printf("%.2f ns/item %.2f cpu-ns/item %d %d cs\n",
		float64(elapsed.Nanoseconds())/float64(*items),
		float64(cpu.Nanoseconds())/float64(*items),
		after.Nvcsw-before.Nvcsw, after.Nivcsw-before.Nivcsw)
}
