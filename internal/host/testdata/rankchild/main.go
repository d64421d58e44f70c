// Command rankchild is a test fixture of the host package: a process with a
// known behaviour for rank_processes and list_processes tests.
//
//	rankchild busy        spin on one CPU until killed
//	rankchild idle        block until killed
//	rankchild alloc MIB   allocate MIB MiB, touch every page, print "ready", block
//	rankchild grow MIB    print "ready", then grow resident memory by MIB MiB
//	                      per second of wall time (touched pages, kept
//	                      reachable), up to 256 MiB, until killed
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

var (
	sink uint64
	// hold keeps the allocation reachable, so its pages stay resident.
	hold []byte
)

func block() {
	for {
		time.Sleep(time.Hour)
	}
}

func main() {
	if len(os.Args) < 2 {
		os.Exit(2)
	}
	switch os.Args[1] {
	case "busy":
		fmt.Println("ready")
		for {
			sink++
		}
	case "idle":
		fmt.Println("ready")
		block()
	case "alloc":
		n, err := strconv.Atoi(os.Args[2])
		if err != nil {
			os.Exit(2)
		}
		hold = make([]byte, n<<20)
		for i := 0; i < len(hold); i += 4096 {
			hold[i] = 1
		}
		fmt.Println("ready")
		block()
	case "grow":
		n, err := strconv.ParseFloat(os.Args[2], 64)
		if err != nil {
			os.Exit(2)
		}
		fmt.Println("ready")
		var chunks [][]byte
		start, have := time.Now(), 0
		for {
			want := min(int(n*float64(1<<20)*time.Since(start).Seconds()), 256<<20)
			for have < want {
				c := make([]byte, 64<<10)
				for i := 0; i < len(c); i += 4096 {
					c[i] = 1
				}
				chunks = append(chunks, c)
				have += len(c)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	os.Exit(2)
}
