// Command controller-runtime-cache is the controller-runtime contender of Rudder's cache
// benchmark (bench/cache.ts): it syncs a controller-runtime cache of the ConfigMaps in one
// namespace and prints one JSON line with the time to synced and the resident memory before
// and after, each read after a forced GC.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

type result struct {
	SyncMs           float64 `json:"syncMs"`
	RssBaselineBytes int64   `json:"rssBaselineBytes"`
	RssSyncedBytes   int64   `json:"rssSyncedBytes"`
	Objects          int     `json:"objects"`
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "path of the kubeconfig file")
	namespace := flag.String("namespace", "", "namespace whose ConfigMaps are cached")
	flag.Int("objects", 0, "how many ConfigMaps the namespace holds (the harness checks the count)")
	flag.Parse()
	if *kubeconfig == "" || *namespace == "" {
		fail(fmt.Errorf("--kubeconfig and --namespace are required"))
	}
	if err := run(*kubeconfig, *namespace); err != nil {
		fail(err)
	}
}

func run(kubeconfig, namespace string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
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
	c, err := cache.New(cfg, cache.Options{
		HTTPClient:        httpClient,
		Scheme:            clientgoscheme.Scheme,
		Mapper:            mapper,
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
	})
	if err != nil {
		return err
	}
	// Give up after 10 minutes, so no peer outlives a harness that was killed outright.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	baseline, err := rssAfterGC()
	if err != nil {
		return err
	}
	start := time.Now()
	startErr := make(chan error, 1)
	go func() { startErr <- c.Start(ctx) }()
	// WaitForCacheSync (and a blocking GetInformer) polls every 100 ms, which would round the
	// time to synced up to the next 100 ms; poll the informer every millisecond instead.
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
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("cache did not sync")
	}

	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return err
	}
	synced, err := rssAfterGC()
	if err != nil {
		return err
	}
	line, err := json.Marshal(result{
		SyncMs:           syncMs,
		RssBaselineBytes: baseline,
		RssSyncedBytes:   synced,
		Objects:          len(list.Items),
	})
	if err != nil {
		return err
	}
	fmt.Println(string(line))
	runtime.KeepAlive(list)
	cancel()
	select {
	case err := <-startErr:
		return err
	case <-time.After(5 * time.Second):
		return nil
	}
}

// rssAfterGC collects garbage, returns freed memory to the OS and reads this process's VmRSS.
func rssAfterGC() (int64, error) {
	runtime.GC()
	debug.FreeOSMemory()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) == 3 && fields[0] == "VmRSS:" && fields[2] == "kB" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/self/status")
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "controller-runtime peer:", err)
	os.Exit(1)
}
