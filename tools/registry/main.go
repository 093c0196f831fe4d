// Command registry serves an in-memory OCI distribution registry (go-containerregistry's
// pkg/registry) on a loopback address, for Rudder's container tests. It prints the address it
// listens on, then serves until it is killed or its parent closes stdin.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on (loopback)")
	exitOnEOF := flag.Bool("exit-on-stdin-eof", false, "exit when stdin closes (the parent died)")
	flag.Parse()
	listener, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(listener.Addr().String())
	if *exitOnEOF {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			os.Exit(0)
		}()
	}
	handler := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	log.Fatal(http.Serve(listener, handler))
}
