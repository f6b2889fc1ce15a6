// Command interop drives franz-go and sarama against a Kafka broker for kgroup's interop
// tests (tests/interop/test_go_clients.py). It is built once by `make go-clients` into
// build/go/interop, from the modules go.mod and go.sum pin.
//
//	interop ROLE -brokers HOST:PORT [flags]
//
// Roles, franz-go: franz-consume, franz-share, franz-produce, franz-eos, kadm; sarama:
// sarama-consume, sarama-produce, sarama-offsets. Every role prints JSON events, one a line,
// each with "event" and "ts" (µs since the epoch, the clock the other clients' events use):
// "ready", "assigned" / "revoked" / "lost" (partitions as [topic, partition]), "records"
// ([topic, partition, offset, key, value], plus delivery count and acknowledgement for a
// share consumer), "acks", "produced", "transformed", "result" (kadm, sarama-offsets),
// "error", and "closed" last. A consumer stops after -max records and -idle ms without a new
// one (never, with -max 0), or at SIGTERM; it closes its client, leaving its group.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

var (
	brokers    = flag.String("brokers", "127.0.0.1:9092", "bootstrap servers, comma separated")
	group      = flag.String("group", "", "consumer or share group")
	topics     = flag.String("topic", "", "topics, comma separated")
	output     = flag.String("output", "", "output topic (franz-eos)")
	protocol   = flag.String("protocol", "classic", "classic | consumer (KIP-848)")
	isolation  = flag.String("isolation", "uncommitted", "franz-consume: uncommitted | committed")
	balancer   = flag.String("balancer", "cooperative-sticky", "range | roundrobin | sticky | cooperative-sticky")
	instance   = flag.String("instance", "", "group.instance.id (static membership)")
	rack       = flag.String("rack", "", "client rack")
	clientID   = flag.String("client-id", "", "client id")
	count      = flag.Int("count", 10, "records to produce")
	partitions = flag.Int("partitions", 1, "spread produced records over this many partitions")
	prefix     = flag.String("prefix", "v", "produced values are PREFIX0, PREFIX1, ...")
	idempotent = flag.Bool("idempotent", true, "idempotent producer")
	txnID      = flag.String("txn", "", "transactional id")
	abort      = flag.Bool("abort", false, "abort the transaction instead of committing it")
	mode       = flag.String("mode", "implicit", "share acknowledgement: implicit | explicit")
	release    = flag.String("release", "", "explicit mode: values to release on their first delivery")
	reject     = flag.String("reject", "", "explicit mode: values to reject")
	maxRecords = flag.Int("max", 0, "stop after this many records (0: run until SIGTERM)")
	idleMs     = flag.Int("idle", 1000, "with -max: stop this long after the last record")
	timeoutS   = flag.Int("timeout", 60, "give up after this many seconds")
	saslMech   = flag.String("sasl", "", "PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512")
	user       = flag.String("user", "", "SASL user")
	password   = flag.String("password", "", "SASL password")
	caFile     = flag.String("ca", "", "TLS: CA certificate (PEM); TLS is on when set")
	certFile   = flag.String("cert", "", "TLS: client certificate (PEM)")
	keyFile    = flag.String("key", "", "TLS: client key (PEM)")
	debug      = flag.Bool("debug", false, "franz-go: log the client's debug lines to stderr")
	script     = flag.String("script", "", "kadm: JSON list of admin calls, each [name, args...]")
)

var outMu sync.Mutex

func emit(event string, fields map[string]any) {
	line := map[string]any{"event": event, "ts": time.Now().UnixMicro()}
	for k, v := range fields {
		line[k] = v
	}
	b, err := json.Marshal(line)
	if err != nil {
		b = []byte(fmt.Sprintf(`{"event":"error","error":%q}`, err.Error()))
	}
	outMu.Lock()
	defer outMu.Unlock()
	os.Stdout.Write(append(b, '\n'))
}

func errorText(err error) any {
	if err == nil {
		return nil
	}
	return err.Error()
}

func fail(err error) {
	emit("error", map[string]any{"error": err.Error()})
	emit("closed", nil)
	os.Exit(1)
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func set(s string) map[string]bool {
	out := map[string]bool{}
	for _, v := range split(s) {
		out[v] = true
	}
	return out
}

// partitionList turns topic -> partitions into sorted [topic, partition] pairs.
func partitionList(m map[string][]int32) [][]any {
	out := [][]any{} // [] rather than null in the JSON when there are none
	for t, ps := range m {
		for _, p := range ps {
			out = append(out, []any{t, p})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i][0].(string) != out[j][0].(string) {
			return out[i][0].(string) < out[j][0].(string)
		}
		return out[i][1].(int32) < out[j][1].(int32)
	})
	return out
}

func tlsConfig() *tls.Config {
	if *caFile == "" {
		return nil
	}
	pem, err := os.ReadFile(*caFile)
	if err != nil {
		fail(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if *certFile != "" {
		cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			fail(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}

// stopper ends a consumer: at SIGTERM, at -timeout, or -idle ms after the -max'th record.
type stopper struct {
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	seen   int
	last   time.Time
}

func newStopper() *stopper {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(*timeoutS)*time.Second)
	s := &stopper{ctx: ctx, cancel: cancel, last: time.Now()}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-signals
		cancel()
	}()
	return s
}

func (s *stopper) saw(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n > 0 {
		s.seen += n
		s.last = time.Now()
	}
}

func (s *stopper) done() bool {
	if s.ctx.Err() != nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return *maxRecords > 0 && s.seen >= *maxRecords && time.Since(s.last) >= time.Duration(*idleMs)*time.Millisecond
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: interop ROLE [flags]")
		os.Exit(2)
	}
	role := os.Args[1]
	flag.CommandLine.Parse(os.Args[2:])
	roles := map[string]func(){
		"franz-consume": franzConsume, "franz-share": franzShare, "franz-produce": franzProduce,
		"franz-eos": franzEOS, "kadm": kadmScript,
		"sarama-consume": saramaConsume, "sarama-produce": saramaProduce, "sarama-offsets": saramaOffsets,
	}
	run, ok := roles[role]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown role %q\n", role)
		os.Exit(2)
	}
	run()
}
