// Command controller-runtime-peer is the Go controller-runtime contender of Rudder's benchmark
// suite (bench/suite.ts). One binary, one measure per run, chosen with --mode:
//
//   - sync: a cache of the ConfigMaps of one namespace; time to synced, RSS and live heap.
//     With --hold the cache keeps running after the sync line until SIGTERM (the relist measure).
//   - reconcile: a manager and a controller whose reconciler merge-patches one annotation of
//     every ConfigMap once; time, CPU seconds and RSS until all are patched.
//   - latency: the same controller, read-only; event → reconcile latency of the changes the
//     harness makes (each carries its send time in an annotation).
//   - idle: a manager and a controller that do nothing, with /readyz; the harness times start
//     to ready and reads the RSS of the idle process.
//
// --content-type chooses the wire format (protobuf, the client-go default for built-in kinds,
// or JSON). Client-side rate limits and the work queue's rate limiter are off, and the cache
// drops managedFields (as Rudder's cache does by default), so both sides do the same work.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sort"

	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Annotations the harness and the reconcilers use; the same names as in bench/contenders/rudder.ts.
const (
	tokenAnnotation = "bench.rudder.dev/token"
	sentAnnotation  = "bench.rudder.dev/sent"
	seqAnnotation   = "bench.rudder.dev/seq"
)

type options struct {
	mode, kubeconfig, namespace, contentType, token string
	objects, workers, count, port                   int
	hold                                            bool
	timeout                                         time.Duration
}

func main() {
	var o options
	// Our own flag set: controller-runtime registers --kubeconfig on flag.CommandLine.
	flags := flag.NewFlagSet("controller-runtime-peer", flag.ExitOnError)
	flags.StringVar(&o.mode, "mode", "sync", "sync, reconcile, latency or idle")
	flags.StringVar(&o.kubeconfig, "kubeconfig", "", "path of the kubeconfig file")
	flags.StringVar(&o.namespace, "namespace", "", "namespace whose ConfigMaps are watched")
	flags.StringVar(&o.contentType, "content-type", "protobuf", "protobuf or json")
	flags.StringVar(&o.token, "token", "", "reconcile: the value every object's annotation is patched to")
	flags.IntVar(&o.objects, "objects", 0, "how many ConfigMaps the namespace holds")
	flags.IntVar(&o.workers, "workers", 1, "reconcile, latency: MaxConcurrentReconciles")
	flags.IntVar(&o.count, "count", 0, "latency: how many changes the harness makes")
	flags.IntVar(&o.port, "port", 0, "idle: port of the health probe server")
	flags.BoolVar(&o.hold, "hold", false, "sync: keep the cache running after the sync line until SIGTERM")
	flags.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	if err := flags.Parse(os.Args[1:]); err != nil {
		fail(err)
	}
	if o.kubeconfig == "" || o.namespace == "" {
		fail(fmt.Errorf("--kubeconfig and --namespace are required"))
	}
	log.SetLogger(logr.Discard())
	var err error
	switch o.mode {
	case "sync":
		err = runSync(o)
	case "reconcile", "latency":
		err = runController(o)
	case "idle":
		err = runIdle(o)
	default:
		err = fmt.Errorf("unknown --mode %q", o.mode)
	}
	if err != nil {
		fail(err)
	}
}

// restConfig loads the kubeconfig with the chosen wire format and no client-side rate limit.
func restConfig(o options) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return nil, err
	}
	switch o.contentType {
	case "protobuf":
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	case "json":
		cfg.ContentType = "application/json"
		cfg.AcceptContentTypes = "application/json"
	default:
		return nil, fmt.Errorf("unknown --content-type %q", o.contentType)
	}
	cfg.QPS = -1 // no client-side throttling, as Rudder has none
	return cfg, nil
}

func cacheOptions(namespace string) cache.Options {
	return cache.Options{
		Scheme:            clientgoscheme.Scheme,
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		DefaultTransform:  cache.TransformStripManagedFields(),
	}
}

func runSync(o options) error {
	cfg, err := restConfig(o)
	if err != nil {
		return err
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	// Resolve ConfigMap's REST mapping before the clock starts: Rudder knows built-in kinds
	// without discovery, so timing discovery here would measure something else.
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return err
	}
	if _, err := mapper.RESTMapping(schema.GroupKind{Kind: "ConfigMap"}, "v1"); err != nil {
		return err
	}
	opts := cacheOptions(o.namespace)
	opts.HTTPClient = httpClient
	opts.Mapper = mapper
	c, err := cache.New(cfg, opts)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()

	rssBaseline, heapBaseline, err := memoryAfterGC()
	if err != nil {
		return err
	}
	start := time.Now()
	startErr := make(chan error, 1)
	go func() { startErr <- c.Start(ctx) }()
	// WaitForCacheSync polls every 100 ms, which would round the time up; poll every ms.
	informer, err := c.GetInformer(ctx, &corev1.ConfigMap{}, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	for !informer.HasSynced() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("cache did not sync: %w", ctx.Err())
		case err := <-startErr:
			return fmt.Errorf("cache stopped before it synced: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	syncMs := float64(time.Since(start).Microseconds()) / 1000
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.InNamespace(o.namespace)); err != nil {
		return err
	}
	objects := len(list.Items)
	list = corev1.ConfigMapList{}
	rssSynced, heapSynced, err := memoryAfterGC()
	if err != nil {
		return err
	}
	report(map[string]any{
		"syncMs": syncMs, "rssBaselineBytes": rssBaseline, "rssSyncedBytes": rssSynced,
		"heapBaselineBytes": heapBaseline, "heapSyncedBytes": heapSynced, "objects": objects,
	})
	if o.hold {
		stop, cancelStop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
		defer cancelStop()
		select {
		case <-stop.Done():
		case err := <-startErr:
			return fmt.Errorf("cache stopped while held: %v", err)
		}
	}
	runtime.KeepAlive(c)
	return nil
}

// benchReconciler patches (reconcile mode) or times (latency mode) every request.
type benchReconciler struct {
	c         client.Client
	o         options
	calls     atomic.Int64
	patched   atomic.Int64
	ready     chan struct{}
	done      chan struct{}
	once      sync.Once
	readyOnce sync.Once

	mu        sync.Mutex
	latencies map[int]float64
}

func (r *benchReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if r.calls.Add(1) >= int64(r.o.objects) {
		r.readyOnce.Do(func() { close(r.ready) })
	}
	var cm corev1.ConfigMap
	if err := r.c.Get(ctx, req.NamespacedName, &cm); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if r.o.mode == "latency" {
		now := float64(time.Now().UnixMicro()) / 1000
		sent, err1 := strconv.ParseFloat(cm.Annotations[sentAnnotation], 64)
		seq, err2 := strconv.Atoi(cm.Annotations[seqAnnotation])
		if err1 != nil || err2 != nil || !strings.HasPrefix(cm.Annotations[tokenAnnotation], r.o.token) {
			return reconcile.Result{}, nil
		}
		r.mu.Lock()
		if _, seen := r.latencies[seq]; !seen {
			r.latencies[seq] = now - sent
			if len(r.latencies) >= r.o.count {
				r.once.Do(func() { close(r.done) })
			}
		}
		r.mu.Unlock()
		return reconcile.Result{}, nil
	}
	if cm.Annotations[tokenAnnotation] == r.o.token {
		return reconcile.Result{}, nil
	}
	original := cm.DeepCopy()
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[tokenAnnotation] = r.o.token
	if err := r.c.Patch(ctx, &cm, client.MergeFrom(original)); err != nil {
		return reconcile.Result{}, err
	}
	if r.patched.Add(1) >= int64(r.o.objects) {
		r.once.Do(func() { close(r.done) })
	}
	return reconcile.Result{}, nil
}

// noRateLimit hands every failed item out again at once: rate limits are off on both sides.
type noRateLimit struct{}

func (noRateLimit) When(reconcile.Request) time.Duration { return 0 }
func (noRateLimit) Forget(reconcile.Request)             {}
func (noRateLimit) NumRequeues(reconcile.Request) int    { return 0 }

var _ workqueue.TypedRateLimiter[reconcile.Request] = noRateLimit{}

func newManager(o options, probeAddress string) (ctrl.Manager, error) {
	cfg, err := restConfig(o)
	if err != nil {
		return nil, err
	}
	return ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 clientgoscheme.Scheme,
		Cache:                  cacheOptions(o.namespace),
		Metrics:                server.Options{BindAddress: "0"},
		HealthProbeBindAddress: probeAddress,
		LeaderElection:         false,
	})
}

func addController(mgr ctrl.Manager, r reconcile.Reconciler, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.ConfigMap{}).
		Named("bench").
		WithOptions(controller.Options{MaxConcurrentReconciles: workers, RateLimiter: noRateLimit{}}).
		Complete(r)
}

func runController(o options) error {
	mgr, err := newManager(o, "0")
	if err != nil {
		return err
	}
	r := &benchReconciler{
		c: mgr.GetClient(), o: o, ready: make(chan struct{}), done: make(chan struct{}),
		latencies: map[int]float64{},
	}
	if err := addController(mgr, r, o.workers); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	cpuStart, err := cpuSeconds()
	if err != nil {
		return err
	}
	start := time.Now()
	startErr := make(chan error, 1)
	go func() { startErr <- mgr.Start(ctx) }()
	wait := func(ch chan struct{}, what string) error {
		select {
		case <-ch:
			return nil
		case err := <-startErr:
			return fmt.Errorf("manager stopped before %s: %v", what, err)
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		}
	}
	if o.mode == "reconcile" {
		if err := wait(r.done, "every object was patched"); err != nil {
			return err
		}
		elapsed := time.Since(start)
		cpuEnd, err := cpuSeconds()
		if err != nil {
			return err
		}
		rss, err := rssBytes()
		if err != nil {
			return err
		}
		anon, err := statusBytes("RssAnon:")
		if err != nil {
			return err
		}
		report(map[string]any{
			"ms": float64(elapsed.Microseconds()) / 1000, "cpuSeconds": cpuEnd - cpuStart,
			"rssAfterBytes": rss, "rssAnonAfterBytes": anon, "objects": int(r.patched.Load()),
		})
	} else {
		if err := wait(r.ready, "the first reconcile of every object"); err != nil {
			return err
		}
		report(map[string]any{"ready": true})
		if err := wait(r.done, "every change was seen"); err != nil {
			r.mu.Lock()
			seen := len(r.latencies)
			r.mu.Unlock()
			return fmt.Errorf("%v (%d of %d changes seen)", err, seen, o.count)
		}
		r.mu.Lock()
		values := make([]float64, 0, len(r.latencies))
		for _, v := range r.latencies {
			values = append(values, v)
		}
		r.mu.Unlock()
		sort.Float64s(values)
		report(map[string]any{
			"p50Ms": quantile(values, 0.5), "p99Ms": quantile(values, 0.99),
			"maxMs": values[len(values)-1], "changes": len(values),
		})
	}
	cancel()
	select {
	case <-startErr:
	case <-time.After(5 * time.Second):
	}
	return nil
}

func runIdle(o options) error {
	mgr, err := newManager(o, fmt.Sprintf("127.0.0.1:%d", o.port))
	if err != nil {
		return err
	}
	// Rudder's /readyz is 200 only once its informers have synced; ask the same of Go.
	synced := atomic.Bool{}
	if err := mgr.AddReadyzCheck("informers", func(*http.Request) error {
		if !synced.Load() {
			return fmt.Errorf("caches not synced")
		}
		return nil
	}); err != nil {
		return err
	}
	r := &benchReconciler{c: mgr.GetClient(), o: options{mode: "latency"}, ready: make(chan struct{}), done: make(chan struct{}), latencies: map[int]float64{}}
	if err := addController(mgr, r, 1); err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, o.timeout)
	defer cancelTimeout()
	go func() {
		if mgr.GetCache().WaitForCacheSync(ctx) {
			synced.Store(true)
		}
	}()
	return mgr.Start(ctx)
}

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	index := int(float64(len(sorted)-1) * q)
	return sorted[index]
}

func report(fields map[string]any) {
	line, err := json.Marshal(fields)
	if err != nil {
		fail(err)
	}
	fmt.Println(string(line))
}

// memoryAfterGC collects garbage, returns freed memory to the OS, and reads VmRSS and the live
// heap (HeapAlloc: bytes of reachable objects and not yet swept ones, after a full GC only
// reachable ones).
func memoryAfterGC() (rss int64, heap int64, err error) {
	runtime.GC()
	debug.FreeOSMemory()
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	rss, err = rssBytes()
	return rss, int64(stats.HeapAlloc), err
}

func rssBytes() (int64, error) {
	return statusBytes("VmRSS:")
}

// statusBytes reads one "<field> <n> kB" line of /proc/self/status: VmRSS, or its anonymous part
// RssAnon (the heap, stacks, the runtime's own allocations; not the executable's pages).
func statusBytes(field string) (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) == 3 && fields[0] == field && fields[2] == "kB" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/self/status", field)
}

// cpuSeconds is this process's user plus system CPU time from /proc/self/stat.
func cpuSeconds() (float64, error) {
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, err
	}
	// Fields after the command (which may hold spaces) start after the last ')'.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("cannot parse /proc/self/stat")
	}
	return (utime + stime) / 100, nil // USER_HZ is 100 on Linux
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "controller-runtime peer:", err)
	os.Exit(1)
}
