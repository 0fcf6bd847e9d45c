// chatbench-go: the Go peers of the ChatLink benchmark, on gorilla/websocket.
//
//	chatbench-go client -url ws://127.0.0.1:P/ -n N -out FILE [-flush N] [-compress]
//	    A short idiomatic chat client: reads messages and writes each as one JSON line in
//	    chatlinkd's store format (seq, time, dir, room, type, data) to FILE, handing every line
//	    to the kernel as it arrives (no fsync). After the N-th line it prints
//	    "done <CLOCK_MONOTONIC seconds>" and waits for stdin to close. -n 0 means never done
//	    (the idle scenario).
//
//	chatbench-go count -n N
//	    A counting backend: listens on 127.0.0.1:0, prints "port P", answers pings (gorilla's
//	    default handler), and counts the "send-message" envelopes it receives; at the N-th it
//	    prints "done <CLOCK_MONOTONIC seconds>". It keeps serving until stdin closes.
//
// The monotonic clock is read with clock_gettime(CLOCK_MONOTONIC), the clock Python's
// time.monotonic() reads, so the orchestrator can compare the times across processes.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"
	"unsafe"

	"github.com/gorilla/websocket"
)

func monotonic() float64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&ts)), 0)
	return float64(ts.Sec) + float64(ts.Nsec)/1e9
}

// record is one store line, field order as chatlinkd writes it.
type record struct {
	Seq  uint64          `json:"seq"`
	Time string          `json:"time"`
	Dir  string          `json:"dir"`
	Room json.RawMessage `json:"room"`
	Type string          `json:"type"`
	Data interface{}     `json:"data"`
}

type envelope struct {
	Data struct {
		RoomID json.RawMessage `json:"room_id"`
	} `json:"data"`
}

var null = json.RawMessage("null")

func client(url string, n uint64, out string, flushEvery uint64, compress bool) {
	// With -compress, permessage-deflate is offered (gorilla speaks it without context
	// takeover only, so the source must send each message compressed on its own).
	dialer := *websocket.DefaultDialer
	dialer.EnableCompression = compress
	conn, _, err := dialer.Dial(url, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadLimit(16 << 20)
	f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	// By default one write(2) per line: every line reaches the kernel at once. With -flush N,
	// lines gather in a buffer that is written every N lines (and at the end).
	var sink io.Writer = f
	var buffered *bufio.Writer
	if flushEvery > 1 {
		buffered = bufio.NewWriterSize(f, 1<<20)
		sink = buffered
	}
	enc := json.NewEncoder(sink)
	enc.SetEscapeHTML(false)
	var seq uint64
	for {
		kind, msg, err := conn.ReadMessage()
		if err != nil {
			log.Fatal(err)
		}
		seq++
		rec := record{Seq: seq, Time: time.Now().UTC().Format("2006-01-02T15:04:05.000000Z"), Dir: "in", Room: null}
		var env envelope
		switch {
		case kind == websocket.BinaryMessage:
			rec.Type, rec.Data = "binary", msg // []byte marshals as base64
		case json.Unmarshal(msg, &env) == nil:
			rec.Type, rec.Data = "json", json.RawMessage(msg)
			if len(env.Data.RoomID) > 0 {
				rec.Room = env.Data.RoomID
			}
		default:
			rec.Type, rec.Data = "text", string(msg)
		}
		if err := enc.Encode(rec); err != nil {
			log.Fatal(err)
		}
		if buffered != nil && (seq%flushEvery == 0 || seq == n) {
			if err := buffered.Flush(); err != nil {
				log.Fatal(err)
			}
		}
		if seq == n {
			fmt.Printf("done %.6f\n", monotonic())
			io.Copy(io.Discard, os.Stdin)
			return
		}
	}
}

var sendMessage = []byte(`"send-message"`)

func count(n uint64) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("port %d\n", ln.Addr().(*net.TCPAddr).Port)
	var upgrader websocket.Upgrader
	var seen uint64
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		conn, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		conn.SetReadLimit(16 << 20)
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				return
			}
			if bytes.Contains(msg, sendMessage) {
				seen++
				if seen == n {
					fmt.Printf("done %.6f\n", monotonic())
				}
			}
		}
	})
	go http.Serve(ln, nil)
	io.Copy(io.Discard, os.Stdin)
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("chatbench-go: ")
	if len(os.Args) < 2 {
		log.Fatal("usage: chatbench-go client|count [flags]")
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	url := fs.String("url", "", "backend URL")
	n := fs.Uint64("n", 0, "messages until done")
	out := fs.String("out", "", "store file")
	flushEvery := fs.Uint64("flush", 1, "write the store file every this many lines")
	compress := fs.Bool("compress", false, "offer permessage-deflate (no context takeover)")
	fs.Parse(os.Args[2:])
	switch os.Args[1] {
	case "client":
		client(*url, *n, *out, *flushEvery, *compress)
	case "count":
		count(*n)
	default:
		log.Fatalf("unknown mode %q", os.Args[1])
	}
}
