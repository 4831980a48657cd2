// The client-go peer of `bench:sync`: a SharedInformer on pods, with client-go's defaults, timed
// the way the bench times our source. It prints one JSON line:
//
//	{"timeToSyncedMs":…, "heapPerPodBytes":…, "pods":…, "startedAtMs":…, "syncedAtMs":…, …}
//
// timeToSyncedMs runs from main() (the process's start, give or take the Go runtime's few
// milliseconds) until the informer's HasSynced; startedAtMs/syncedAtMs are Unix milliseconds, so
// the bench can line them up with its server's first LIST. heapPerPodBytes is HeapAlloc after
// runtime.GC() with the informer's cache alive, minus the same before the informer started, over
// the pods cached.
//
// With -latency-events N, after sync it also receives N MODIFIED events for pods annotated
// "bench.pool-controller.dev/written-at-ms" (the writer's Unix milliseconds) and reports the
// write → handler latency, as the bench does for our loop and client-node's informer. It prints
// {"ready":true} once synced and listening, then its result line when the burst is in.
//
// With -wire-floor it runs no informer: it reads a watch-list's frames (protobuf, as the
// informer asks) to the first BOOKMARK, the end of the initial events, decoding nothing but each
// frame's length and type. That is the floor of a sync from this machine's API server: when its
// bytes arrive at a client that spends next to no CPU on them. pods counts the frames before it.
//
// requestMs runs from main() to the first request handed to client-go's transport (the TLS
// handshake comes with it): what the process spends before asking, beside our variant's.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

const writtenAtAnnotation = "bench.pool-controller.dev/written-at-ms"

type result struct {
	TimeToSyncedMs  float64   `json:"timeToSyncedMs"`
	HeapPerPodBytes float64   `json:"heapPerPodBytes"`
	CPUMsAtSynced   float64   `json:"cpuMsAtSynced"`
	Pods            int       `json:"pods"`
	RequestMs       float64   `json:"requestMs"`
	StartedAtMs     float64   `json:"startedAtMs"`
	SyncedAtMs      float64   `json:"syncedAtMs"`
	ContentType     string    `json:"contentType"`
	GoVersion       string    `json:"goVersion"`
	LatencyMs       []float64 `json:"latencyMs,omitempty"`
}

func unixMs(t time.Time) float64 { return float64(t.UnixNano()) / 1e6 }

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	return stats.HeapAlloc
}

// firstRequest notes when the first request reaches the transport.
type firstRequest struct {
	next http.RoundTripper
	once *sync.Once
	at   *time.Time
}

func (f firstRequest) RoundTrip(request *http.Request) (*http.Response, error) {
	f.once.Do(func() { *f.at = time.Now() })
	return f.next.RoundTrip(request)
}

func main() {
	started := time.Now()
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig path")
	namespace := flag.String("namespace", "", "namespace (empty: all)")
	selector := flag.String("selector", "", "label selector")
	contentType := flag.String("content-type", "application/vnd.kubernetes.protobuf",
		"request content type (what Kubernetes' own controllers set); JSON is accepted as a fallback")
	latencyEvents := flag.Int("latency-events", 0, "after sync, wait for this many annotated MODIFIED events")
	qps := flag.Float64("qps", 0, "client-side rate limit; 0: client-go's default (5), negative: none")
	wireFloor := flag.Bool("wire-floor", false,
		"read a watch-list's frames to its end bookmark, decoding nothing (no informer)")
	flag.Parse()

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail(err)
	}
	var requestedAt time.Time
	var requestOnce sync.Once
	config.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return firstRequest{next: next, once: &requestOnce, at: &requestedAt}
	})
	requestMs := func() float64 {
		// Through the Once, so the read is ordered after the transport's write (none: 0).
		requestOnce.Do(func() { requestedAt = started })
		return float64(requestedAt.Sub(started).Microseconds()) / 1e3
	}
	config.ContentType = *contentType
	config.AcceptContentTypes = *contentType + ",application/json"
	// client-go's default client-side rate limit (5 QPS, burst 10) stays unless -qps is given: it
	// throttles a paged LIST (20 pages of 500 for 10,000 pods: 10 at once, then 5 a second).
	if *qps != 0 {
		config.QPS = float32(*qps)
		config.Burst = 10
	}
	if *wireFloor {
		frames, err := readWatchListFrames(config, *namespace, *selector)
		if err != nil {
			fail(err)
		}
		syncedAt := time.Now()
		printResult(result{
			TimeToSyncedMs: float64(syncedAt.Sub(started).Microseconds()) / 1e3,
			CPUMsAtSynced:  processCPUMs(),
			RequestMs:      requestMs(),
			Pods:           frames,
			StartedAtMs:    unixMs(started),
			SyncedAtMs:     unixMs(syncedAt),
			ContentType:    "application/vnd.kubernetes.protobuf;stream=watch (frames only)",
			GoVersion:      runtime.Version(),
		})
		return
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		fail(err)
	}
	heapBefore := heapAlloc()

	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(*namespace),
		informers.WithTweakListOptions(func(options *metav1.ListOptions) { options.LabelSelector = *selector }))
	informer := factory.Core().V1().Pods().Informer()

	latencies := make([]float64, 0, *latencyEvents)
	done := make(chan struct{})
	var synced atomic.Bool
	seen := map[string]bool{}
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj interface{}) {
			if !synced.Load() || *latencyEvents == 0 {
				return
			}
			now := float64(time.Now().UnixNano()) / 1e6
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				return
			}
			stamp, ok := pod.Annotations[writtenAtAnnotation]
			if !ok || seen[pod.Name+"/"+stamp] {
				return
			}
			seen[pod.Name+"/"+stamp] = true
			written, err := strconv.ParseFloat(stamp, 64)
			if err != nil {
				return
			}
			latencies = append(latencies, now-written)
			if len(latencies) == *latencyEvents {
				close(done)
			}
		},
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		fail(fmt.Errorf("informer did not sync"))
	}
	syncedAt := time.Now()
	cpuAtSynced := processCPUMs()
	synced.Store(true)
	pods := len(informer.GetStore().List())
	heapPerPod := float64(heapAlloc()-heapBefore) / float64(max(1, pods))

	out := result{
		TimeToSyncedMs:  float64(syncedAt.Sub(started).Microseconds()) / 1e3,
		HeapPerPodBytes: heapPerPod,
		CPUMsAtSynced:   cpuAtSynced,
		RequestMs:       requestMs(),
		Pods:            pods,
		StartedAtMs:     unixMs(started),
		SyncedAtMs:      unixMs(syncedAt),
		ContentType:     *contentType,
		GoVersion:       runtime.Version(),
	}
	if *latencyEvents > 0 {
		// Tell the bench we are synced and listening, then wait for the burst.
		fmt.Println(`{"ready":true}`)
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			fail(fmt.Errorf("saw %d of %d latency events", len(latencies), *latencyEvents))
		}
		sort.Float64s(latencies)
		out.LatencyMs = latencies
	}
	printResult(out)
}

func printResult(out result) {
	line, _ := json.Marshal(out)
	fmt.Println(string(line))
}

// bookmarkType is a protobuf WatchEvent's first field (1, length-delimited) when it is a
// BOOKMARK: the frame that ends a watch-list's initial events.
var bookmarkType = append([]byte{0x0a, byte(len("BOOKMARK"))}, "BOOKMARK"...)

// readWatchListFrames opens a watch-list (sendInitialEvents, as the informer's reflector does,
// over client-go's own transport: TLS, the token, HTTP/2) and reads its length-prefixed frames
// until the first BOOKMARK; it answers how many frames came before it.
func readWatchListFrames(config *rest.Config, namespace, selector string) (int, error) {
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		return 0, err
	}
	query := url.Values{}
	query.Set("watch", "true")
	query.Set("sendInitialEvents", "true")
	query.Set("resourceVersionMatch", "NotOlderThan")
	query.Set("allowWatchBookmarks", "true")
	query.Set("timeoutSeconds", "300")
	if selector != "" {
		query.Set("labelSelector", selector)
	}
	path := "/api/v1/pods"
	if namespace != "" {
		path = "/api/v1/namespaces/" + url.PathEscape(namespace) + "/pods"
	}
	request, err := http.NewRequest(http.MethodGet, config.Host+path+"?"+query.Encode(), nil)
	if err != nil {
		return 0, err
	}
	request.Header.Set("Accept", "application/vnd.kubernetes.protobuf;stream=watch")
	response, err := httpClient.Do(request)
	if err != nil {
		return 0, err
	}
	defer response.Body.Close()
	if response.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("watch-list: HTTP %d", response.StatusCode)
	}
	reader := bufio.NewReaderSize(response.Body, 1<<20)
	var header [4]byte
	frame := make([]byte, 0, 64<<10)
	for frames := 0; ; frames++ {
		if _, err := io.ReadFull(reader, header[:]); err != nil {
			return frames, fmt.Errorf("watch-list ended before its bookmark: %w", err)
		}
		size := int(binary.BigEndian.Uint32(header[:]))
		if cap(frame) < size {
			frame = make([]byte, size)
		}
		frame = frame[:size]
		if _, err := io.ReadFull(reader, frame); err != nil {
			return frames, fmt.Errorf("watch-list frame cut short: %w", err)
		}
		if bytes.HasPrefix(frame, bookmarkType) {
			return frames, nil
		}
	}
}

// processCPUMs is the process's CPU time so far (user + system, every thread), in ms: the same
// measure as our variants' CPU to synced, so the two clients' costs compare on a machine whose
// two cores the API server shares.
func processCPUMs() float64 {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return -1
	}
	return float64(usage.Utime.Nano()+usage.Stime.Nano()) / 1e6
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "client-go peer: %v\n", err)
	os.Exit(1)
}
