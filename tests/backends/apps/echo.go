// An application behind Go's net/http that answers with the path it routes on.
//
//	go run echo.go -port N        a plain handler: the body is r.URL.Path, as the server decoded it
//	go run echo.go -port N -mux   the same handler under http.ServeMux at "/": the mux redirects
//	                              (301) a path that path.Clean changes, and routes the clean one
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
)

func echo(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(r.URL.Path))
}

func main() {
	port := flag.Int("port", 0, "port on 127.0.0.1")
	mux := flag.Bool("mux", false, "route through http.ServeMux")
	flag.Parse()
	var handler http.Handler = http.HandlerFunc(echo)
	if *mux {
		m := http.NewServeMux()
		m.HandleFunc("/", echo)
		handler = m
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("listening on %d\n", ln.Addr().(*net.TCPAddr).Port)
	http.Serve(ln, handler)
}
