// Command rankchild is a test fixture of the host package: a process with a
// known behaviour for rank_processes and list_processes tests.
//
//	rankchild busy        spin on one CPU until killed
//	rankchild idle        block until killed
//	rankchild alloc MIB   allocate MIB MiB, touch every page, print "ready", block
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
	}
	os.Exit(2)
}
