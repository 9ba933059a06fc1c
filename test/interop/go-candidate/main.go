// go-candidate is client-go's own leader election (tools/leaderelection with a LeaseLock),
// used by leasehold's interop tests as the reference peer. It prints one JSON line per event
// on stdout, with the wall-clock time in Unix nanoseconds:
//
//	{"event":"started","t":...}   OnStartedLeading
//	{"event":"stopped","t":...}   OnStoppedLeading
//	{"event":"new_leader","holder":"...","t":...}
//	{"event":"cancelling","t":...} a signal arrived; leadership ends now (ctx cancelled)
//	{"event":"ctx_done","t":...}   the OnStartedLeading context is done
//
// SIGTERM/SIGINT cancel the context; with ReleaseOnCancel the lease is released, as
// leasehold does.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

var mu sync.Mutex

func emit(fields map[string]any) {
	mu.Lock()
	defer mu.Unlock()
	fields["t"] = time.Now().UnixNano()
	b, _ := json.Marshal(fields)
	fmt.Println(string(b))
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	namespace := flag.String("namespace", "default", "Lease namespace")
	name := flag.String("lease", "", "Lease name")
	identity := flag.String("identity", "", "unique identity")
	leaseDuration := flag.Duration("lease-duration", 15*time.Second, "")
	renewDeadline := flag.Duration("renew-deadline", 10*time.Second, "")
	retryPeriod := flag.Duration("retry-period", 2*time.Second, "")
	flag.Parse()

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeconfig:", err)
		os.Exit(2)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: *name, Namespace: *namespace},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: *identity},
	}
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		// The moment this candidate's leadership ends from its own point of view: the
		// context handed to OnStartedLeading is cancelled right after this line.
		emit(map[string]any{"event": "cancelling"})
		cancel()
	}()

	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   *leaseDuration,
		RenewDeadline:   *renewDeadline,
		RetryPeriod:     *retryPeriod,
		ReleaseOnCancel: true,
		Name:            *name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				emit(map[string]any{"event": "started"})
				<-ctx.Done()
				emit(map[string]any{"event": "ctx_done"})
			},
			OnStoppedLeading: func() { emit(map[string]any{"event": "stopped"}) },
			OnNewLeader:      func(id string) { emit(map[string]any{"event": "new_leader", "holder": id}) },
		},
	})
	emit(map[string]any{"event": "exit"})
}
