// The Go row: the benchmark's work done with golang.org/x/oauth2 as a Go
// user would write it, to compare with raw libcurl and swift-oauth2 in the
// same rounds.
//
//	go-oauth2-bench sequential BASE_URL N
//	go-oauth2-bench concurrent BASE_URL N C
//
// Both get a client-credentials token from BASE_URL/token
// (clientcredentials.Config, client_secret_basic like the Swift benchmark's
// client), then send N GET BASE_URL/api/resource through the *http.Client of
// oauth2.NewClient (oauth2.Transport over a ReuseTokenSource, which signs
// each request), each checked for status 200 and its body read to the end so
// the connection goes back to the pool: sequential from one goroutine (one
// keep-alive connection), concurrent from C goroutines sharing the client,
// each sending its share one after the other. `sequential BASE_URL 1` is
// the start row: one token, one GET, exit.
//
// The one departure from the defaults: the HTTP transport keeps up to 64
// idle connections per host (net/http keeps 2), the connection limit of
// CurlTransport and of the C baseline; with 2, concurrent callers would
// open a new connection for most requests.
//
// It prints one JSON line in the format of the Swift benchmark (see
// Benchmarks/Sources/oauth2-bench/Report.swift). Built by Benchmarks/bench.py
// in GOPATH mode against Debian's golang-golang-x-oauth2-dev, offline:
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o OUT Benchmarks/go/oauth2_bench.go
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "go-oauth2-bench: "+format+"\n", args...)
	os.Exit(1)
}

// cpuSeconds: user plus system time of the whole process (every thread).
func cpuSeconds() float64 {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0
	}
	return float64(usage.Utime.Sec) + float64(usage.Utime.Usec)/1e6 +
		float64(usage.Stime.Sec) + float64(usage.Stime.Usec)/1e6
}

// peakRSSKiB: VmHWM, the peak of this program's own image (getrusage's
// ru_maxrss keeps the peak of the Python driver that exec'ed it too).
func peakRSSKiB() int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			value, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(line, "VmHWM:"), "kB")), 10, 64)
			return value
		}
	}
	return 0
}

// percentileMicroseconds: nearest rank, as Latencies.swift.
func percentileMicroseconds(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	index := int(p*float64(len(sorted)-1) + 0.5)
	return float64(sorted[index].Nanoseconds()) / 1000
}

// caller sends count signed GETs one after the other; returns the latencies and the non-200 answers.
func caller(client *http.Client, url string, count int) ([]time.Duration, int) {
	latencies := make([]time.Duration, 0, count)
	errors := 0
	for i := 0; i < count; i++ {
		started := time.Now()
		response, err := client.Get(url)
		if err != nil {
			fail("GET %s: %v", url, err)
		}
		_, err = io.Copy(io.Discard, response.Body)
		response.Body.Close()
		latencies = append(latencies, time.Since(started))
		if err != nil || response.StatusCode != http.StatusOK {
			errors++
		}
	}
	return latencies, errors
}

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: go-oauth2-bench sequential|concurrent BASE_URL N [C]")
		os.Exit(64)
	}
	mode, base := os.Args[1], strings.TrimSuffix(os.Args[2], "/")
	total, err := strconv.Atoi(os.Args[3])
	concurrency := 1
	if err == nil && len(os.Args) > 4 {
		concurrency, err = strconv.Atoi(os.Args[4])
	}
	if err != nil || total <= 0 || concurrency <= 0 || (mode != "sequential" && mode != "concurrent") {
		fmt.Fprintln(os.Stderr, "go-oauth2-bench: bad arguments")
		os.Exit(64)
	}
	if mode == "sequential" {
		concurrency = 1
	}

	cpuStart := cpuSeconds()
	baseTransport := http.DefaultTransport.(*http.Transport).Clone()
	baseTransport.MaxIdleConnsPerHost = 64
	baseTransport.MaxConnsPerHost = 64
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Transport: baseTransport})
	config := clientcredentials.Config{
		ClientID:     "bench-client",
		ClientSecret: "bench-secret",
		TokenURL:     base + "/token",
		AuthStyle:    oauth2.AuthStyleInHeader,
	}
	source := config.TokenSource(ctx)
	if _, err := source.Token(); err != nil {
		fail("token request: %v", err)
	}
	client := oauth2.NewClient(ctx, source)
	url := base + "/api/resource"

	start := time.Now()
	var latencies []time.Duration
	errors := 0
	if concurrency == 1 {
		latencies, errors = caller(client, url, total)
	} else {
		var group sync.WaitGroup
		var lock sync.Mutex
		latencies = make([]time.Duration, 0, total)
		for index := 0; index < concurrency; index++ {
			count := total / concurrency
			if index < total%concurrency {
				count++
			}
			group.Add(1)
			go func(count int) {
				defer group.Done()
				mine, failed := caller(client, url, count)
				lock.Lock()
				latencies = append(latencies, mine...)
				errors += failed
				lock.Unlock()
			}(count)
		}
		group.Wait()
	}
	seconds := time.Since(start).Seconds()
	cpu := cpuSeconds() - cpuStart
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	fmt.Printf("{\"scenario\":%q,\"implementation\":\"go-x-oauth2\",\"requests\":%d,\"concurrency\":%d,"+
		"\"errors\":%d,\"seconds\":%.6f,\"requests_per_second\":%.1f,\"p50_us\":%.2f,\"p99_us\":%.2f,"+
		"\"cpu_seconds\":%.4f,\"peak_rss_kib\":%d}\n",
		mode, total, concurrency, errors, seconds, float64(total)/seconds,
		percentileMicroseconds(latencies, 0.50), percentileMicroseconds(latencies, 0.99), cpu, peakRSSKiB())
}
