package main

// The franz-go roles: a consumer-group member (classic, or KIP-848 with ServerSideBalancer),
// a share consumer (KIP-932), a producer (idempotent by default, or transactional), a
// consume-transform-produce loop (GroupTransactSession), and kadm admin calls.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func franzBase(id string) []kgo.Opt {
	if *clientID != "" {
		id = *clientID
	}
	opts := []kgo.Opt{kgo.SeedBrokers(split(*brokers)...), kgo.ClientID(id)}
	if *debug {
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelDebug, nil)))
	}
	if cfg := tlsConfig(); cfg != nil {
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	switch *saslMech {
	case "":
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: *user, Pass: *password}.AsMechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: *user, Pass: *password}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: *user, Pass: *password}.AsSha512Mechanism()))
	default:
		fail(fmt.Errorf("unknown SASL mechanism %q", *saslMech))
	}
	return opts
}

func franzBalancer() kgo.GroupBalancer {
	switch *balancer {
	case "range":
		return kgo.RangeBalancer()
	case "roundrobin":
		return kgo.RoundRobinBalancer()
	case "sticky":
		return kgo.StickyBalancer()
	case "cooperative-sticky":
		return kgo.CooperativeStickyBalancer()
	}
	fail(fmt.Errorf("unknown balancer %q", *balancer))
	return nil
}

// pollBriefly polls for at most 300 ms, so that the stopper is asked often.
func pollBriefly(s *stopper, poll func(context.Context) kgo.Fetches) kgo.Fetches {
	ctx, cancel := context.WithTimeout(s.ctx, 300*time.Millisecond)
	defer cancel()
	return poll(ctx)
}

func recordRow(r *kgo.Record) []any {
	return []any{r.Topic, r.Partition, r.Offset, string(r.Key), string(r.Value)}
}

func franzConsume() {
	opts := append(franzBase("franz"),
		kgo.ConsumerGroup(*group), kgo.ConsumeTopics(split(*topics)...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.Balancers(franzBalancer()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			emit("assigned", map[string]any{"partitions": partitionList(m)})
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
			if err := cl.CommitMarkedOffsets(ctx); err != nil {
				emit("commit_failed", map[string]any{"error": err.Error()})
			}
			if len(m) > 0 {
				emit("revoked", map[string]any{"partitions": partitionList(m)})
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			emit("lost", map[string]any{"partitions": partitionList(m)})
		}),
		kgo.AutoCommitMarks(), // only what was polled is committed, after each poll (and on revoke)
	)
	if *isolation == "committed" {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if *protocol == "consumer" {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	if *instance != "" {
		opts = append(opts, kgo.InstanceID(*instance))
	}
	if *rack != "" {
		opts = append(opts, kgo.Rack(*rack))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fail(err)
	}
	emit("ready", nil)
	s := newStopper()
	for !s.done() {
		fetches := pollBriefly(s, cl.PollFetches)
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				emit("error", map[string]any{"topic": t, "partition": p, "error": err.Error()})
			}
		})
		var rows [][]any
		fetches.EachRecord(func(r *kgo.Record) {
			rows = append(rows, recordRow(r))
			cl.MarkCommitRecords(r)
		})
		if len(rows) > 0 {
			emit("records", map[string]any{"records": rows})
			if err := cl.CommitMarkedOffsets(context.Background()); err != nil {
				emit("commit_failed", map[string]any{"error": err.Error()})
			}
		}
		s.saw(len(rows))
	}
	cl.Close() // leaves the group (a static member stays, as Kafka's clients do)
	emit("closed", nil)
}

func franzShare() {
	rel, rej := set(*release), set(*reject)
	explicit := *mode == "explicit"
	cl, err := kgo.NewClient(append(franzBase("franz-share"),
		kgo.ShareGroup(*group), kgo.ConsumeTopics(split(*topics)...),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			var out [][]any
			for _, r := range rs {
				out = append(out, []any{r.Topic, r.Partition, errorText(r.Err)})
			}
			emit("acks", map[string]any{"results": out})
		}),
	)...)
	if err != nil {
		fail(err)
	}
	emit("ready", nil)
	s := newStopper()
	var last []*kgo.Record
	for !s.done() {
		fetches := pollBriefly(s, cl.PollFetches)
		last = nil
		var rows [][]any
		fetches.EachRecord(func(r *kgo.Record) {
			ack := any(nil)
			if explicit {
				status := kgo.AckAccept
				value := string(r.Value)
				if rej[value] {
					status = kgo.AckReject
				} else if rel[value] && r.DeliveryCount() <= 1 {
					status = kgo.AckRelease
				}
				r.Ack(status)
				ack = strings.ToUpper(status.String())
			}
			last = append(last, r)
			rows = append(rows, append(recordRow(r), r.DeliveryCount(), ack))
		})
		if len(rows) > 0 {
			emit("records", map[string]any{"records": rows})
			if explicit {
				if err := cl.FlushAcks(context.Background()); err != nil {
					emit("error", map[string]any{"error": err.Error()})
				}
			}
		}
		s.saw(len(rows))
	}
	// Implicit mode accepts a poll's records at the next poll: accept the last ones now.
	if !explicit && len(last) > 0 {
		cl.MarkAcks(kgo.AckAccept, last...)
	}
	if err := cl.FlushAcks(context.Background()); err != nil {
		emit("error", map[string]any{"error": err.Error()})
	}
	cl.Close()
	emit("closed", nil)
}

func produced(results kgo.ProduceResults) [][]any {
	var out [][]any
	for _, r := range results {
		if r.Err != nil {
			out = append(out, []any{r.Record.Topic, r.Record.Partition, -1, r.Err.Error()})
			continue
		}
		out = append(out, []any{r.Record.Topic, r.Record.Partition, r.Record.Offset, nil})
	}
	return out
}

func franzProduce() {
	opts := append(franzBase("franz-producer"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if !*idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	if *txnID != "" {
		opts = append(opts, kgo.TransactionalID(*txnID))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fail(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(*timeoutS)*time.Second)
	defer cancel()
	var records []*kgo.Record
	for i := 0; i < *count; i++ {
		records = append(records, &kgo.Record{Topic: split(*topics)[0], Partition: int32(i % *partitions),
			Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("%s%d", *prefix, i))})
	}
	if *txnID != "" {
		if err := cl.BeginTransaction(); err != nil {
			fail(err)
		}
	}
	results := cl.ProduceSync(ctx, records...)
	emit("produced", map[string]any{"records": produced(results)})
	if *txnID != "" {
		how := kgo.TryCommit
		if *abort {
			how = kgo.TryAbort
		}
		if err := cl.EndTransaction(ctx, how); err != nil {
			fail(err)
		}
		emit("ended", map[string]any{"committed": !*abort})
	}
	emit("closed", nil)
}

func franzEOS() {
	sess, err := kgo.NewGroupTransactSession(append(franzBase("franz-eos"),
		kgo.ConsumerGroup(*group), kgo.ConsumeTopics(split(*topics)...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.TransactionalID(*txnID),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.Balancers(franzBalancer()),
	)...)
	if err != nil {
		fail(err)
	}
	emit("ready", nil)
	s := newStopper()
	for !s.done() {
		fetches := pollBriefly(s, sess.PollFetches)
		n := fetches.NumRecords()
		if n == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			fail(err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			sess.Produce(context.Background(), &kgo.Record{Topic: *output, Key: r.Key,
				Value: []byte(strings.ToUpper(string(r.Value)))}, nil)
		})
		committed, err := sess.End(context.Background(), kgo.TryCommit)
		emit("transformed", map[string]any{"count": n, "committed": committed, "error": errorText(err)})
		if committed {
			s.saw(n)
		}
	}
	sess.Close()
	emit("closed", nil)
}

// ---- kadm ---------------------------------------------------------------------------------

func offsetsOf(lo kadm.ListedOffsets) map[string]any {
	out := map[string]any{}
	lo.Each(func(o kadm.ListedOffset) {
		key := fmt.Sprintf("%s:%d", o.Topic, o.Partition)
		if o.Err != nil {
			out[key] = o.Err.Error()
		} else {
			out[key] = []any{o.Offset, o.Timestamp}
		}
	})
	return out
}

func topicsSet(ts kadm.TopicsSet) [][]any {
	m := map[string][]int32{}
	for t, ps := range ts {
		for p := range ps {
			m[t] = append(m[t], p)
		}
	}
	return partitionList(m)
}

// kadmCall runs one admin call of the script: [name, args...]; its result is plain JSON.
func kadmCall(ctx context.Context, adm *kadm.Client, call []any) (any, error) {
	arg := func(i int) string { return fmt.Sprint(call[i]) }
	num := func(i int) int64 { return int64(call[i].(float64)) }
	switch call[0] {
	case "brokers":
		bs, err := adm.ListBrokers(ctx)
		var out [][]any
		for _, b := range bs {
			out = append(out, []any{b.NodeID, b.Host, b.Port})
		}
		return out, err
	case "metadata":
		m, err := adm.BrokerMetadata(ctx)
		return map[string]any{"cluster": m.Cluster, "controller": m.Controller, "brokers": len(m.Brokers)}, err
	case "createTopic":
		r, err := adm.CreateTopic(ctx, int32(num(2)), -1, nil, arg(1))
		return errorText(r.Err), err
	case "listTopics":
		ts, err := adm.ListTopics(ctx)
		names := ts.Names()
		sort.Strings(names)
		return names, err
	case "listStartOffsets":
		lo, err := adm.ListStartOffsets(ctx, arg(1))
		return offsetsOf(lo), err
	case "listEndOffsets":
		lo, err := adm.ListEndOffsets(ctx, arg(1))
		return offsetsOf(lo), err
	case "listOffsetsAfter":
		lo, err := adm.ListOffsetsAfterMilli(ctx, num(1), arg(2))
		return offsetsOf(lo), err
	case "commitOffsets":
		os := kadm.Offsets{}
		os.AddOffset(arg(2), int32(num(3)), num(4), -1)
		r, err := adm.CommitOffsets(ctx, arg(1), os)
		return errorText(r.Error()), err
	case "fetchOffsets":
		r, err := adm.FetchOffsets(ctx, arg(1))
		out := map[string]any{}
		r.Each(func(o kadm.OffsetResponse) {
			out[fmt.Sprintf("%s:%d", o.Topic, o.Partition)] = o.At
		})
		return out, err
	case "deleteOffsets":
		r, err := adm.DeleteOffsets(ctx, arg(1), kadm.TopicsSet{arg(2): {int32(num(3)): {}}})
		return errorText(r.Error()), err
	case "describeTopicConfigs":
		rc, err := adm.DescribeTopicConfigs(ctx, arg(1))
		out := map[string]any{}
		for _, r := range rc {
			for _, c := range r.Configs {
				if c.Value != nil {
					out[c.Key] = []any{*c.Value, c.Source.String()}
				}
			}
		}
		return out, err
	case "alterTopicConfig":
		value := arg(3)
		r, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: arg(2), Value: &value}}, arg(1))
		var errs []any
		for _, x := range r {
			errs = append(errs, errorText(x.Err))
		}
		return errs, err
	case "deleteRecords":
		os := kadm.Offsets{}
		os.AddOffset(arg(1), int32(num(2)), num(3), -1)
		r, err := adm.DeleteRecords(ctx, os)
		out := map[string]any{}
		r.Each(func(d kadm.DeleteRecordsResponse) {
			if d.Err != nil {
				out[fmt.Sprintf("%s:%d", d.Topic, d.Partition)] = d.Err.Error()
			} else {
				out[fmt.Sprintf("%s:%d", d.Topic, d.Partition)] = d.LowWatermark
			}
		})
		return out, err
	case "listGroups":
		gs, err := adm.ListGroups(ctx)
		var out [][]any
		for _, g := range gs.Sorted() {
			out = append(out, []any{g.Group, g.GroupType, g.ProtocolType, g.State})
		}
		return out, err
	case "describeGroups":
		ds, err := adm.DescribeGroups(ctx, arg(1))
		d := ds[arg(1)]
		return map[string]any{"state": d.State, "protocolType": d.ProtocolType, "protocol": d.Protocol,
			"members": len(d.Members), "error": errorText(d.Err)}, err
	case "describeConsumerGroups":
		ds, err := adm.DescribeConsumerGroups(ctx, arg(1))
		d := ds[arg(1)]
		var members []any
		for _, m := range d.Members {
			members = append(members, map[string]any{"clientId": m.ClientID, "epoch": m.MemberEpoch,
				"assignment": topicsSet(m.Assignment), "target": topicsSet(m.TargetAssignment)})
		}
		return map[string]any{"state": d.State, "epoch": d.Epoch, "assignmentEpoch": d.AssignmentEpoch,
			"assignor": d.AssignorName, "members": members, "error": errorText(d.Err)}, err
	case "describeShareGroups":
		ds, err := adm.DescribeShareGroups(ctx, arg(1))
		d := ds[arg(1)]
		var members []any
		for _, m := range d.Members {
			members = append(members, map[string]any{"clientId": m.ClientID, "assignment": topicsSet(m.Assignment)})
		}
		return map[string]any{"state": d.GroupState, "assignor": d.Assignor, "members": members,
			"error": errorText(d.Err)}, err
	case "describeShareGroupOffsets":
		ds, err := adm.DescribeShareGroupOffsets(ctx, arg(1))
		out := map[string]any{}
		for t, ps := range ds[arg(1)].Offsets {
			for p, o := range ps {
				out[fmt.Sprintf("%s:%d", t, p)] = []any{o.StartOffset, o.Lag, errorText(o.Err)}
			}
		}
		return out, err
	case "deleteGroup":
		r, err := adm.DeleteGroup(ctx, arg(1))
		return errorText(r.Err), err
	case "describeProducers":
		ps, err := adm.DescribeProducers(ctx, kadm.TopicsSet{arg(1): {int32(num(2)): {}}})
		var out [][]any
		ps.EachProducer(func(p kadm.DescribedProducer) {
			out = append(out, []any{p.ProducerEpoch, p.LastSequence, p.CurrentTxnStartOffset})
		})
		return out, err
	case "listTransactions":
		ts, err := adm.ListTransactions(ctx, nil, nil)
		var out [][]any
		for _, t := range ts.Sorted() {
			out = append(out, []any{t.TxnID, t.State})
		}
		return out, err
	case "describeTransactions":
		ts, err := adm.DescribeTransactions(ctx, arg(1))
		t := ts[arg(1)]
		return map[string]any{"state": t.State, "timeoutMs": t.TimeoutMillis, "topics": topicsSet(t.Topics),
			"error": errorText(t.Err)}, err
	case "upsertSCRAM":
		mech := kadm.ScramSha256
		if arg(2) == "SCRAM-SHA-512" {
			mech = kadm.ScramSha512
		}
		r, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: arg(1), Mechanism: mech,
			Iterations: int32(num(3)), Password: arg(4)}})
		return errorText(r[arg(1)].Err), err
	case "describeUserSCRAMs":
		ds, err := adm.DescribeUserSCRAMs(ctx)
		out := map[string]any{}
		for _, d := range ds.Sorted() {
			var infos []string
			for _, c := range d.CredInfos {
				infos = append(infos, c.String())
			}
			sort.Strings(infos)
			out[d.User] = infos
		}
		return out, err
	case "createACL":
		b := kadm.NewACLs().Allow(arg(1)).AllowHosts("*").Topics(arg(2)).Operations(kadm.OpRead).
			ResourcePatternType(kadm.ACLPatternLiteral)
		r, err := adm.CreateACLs(ctx, b)
		var errs []any
		for _, x := range r {
			errs = append(errs, errorText(x.Err))
		}
		return errs, err
	case "describeACLs":
		b := kadm.NewACLs().Allow().AllowHosts().Topics(arg(1)).Operations(kadm.OpAny).
			ResourcePatternType(kadm.ACLPatternMatch)
		r, err := adm.DescribeACLs(ctx, b)
		var out []any
		for _, x := range r {
			if x.Err != nil {
				out = append(out, x.Err.Error())
			}
			for _, d := range x.Described {
				out = append(out, []any{d.Principal, d.Name, d.Operation.String()})
			}
		}
		return out, err
	case "deleteACLs":
		b := kadm.NewACLs().Allow(arg(1)).AllowHosts("*").Topics(arg(2)).Operations(kadm.OpRead).
			ResourcePatternType(kadm.ACLPatternLiteral)
		r, err := adm.DeleteACLs(ctx, b)
		n := 0
		for _, x := range r {
			n += len(x.Deleted)
		}
		return n, err
	}
	return nil, fmt.Errorf("unknown kadm call %v", call[0])
}

func kadmScript() {
	cl, err := kgo.NewClient(franzBase("kadm")...)
	if err != nil {
		fail(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var calls [][]any
	if err := json.Unmarshal([]byte(*script), &calls); err != nil {
		fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(*timeoutS)*time.Second)
	defer cancel()
	for _, call := range calls {
		result, err := kadmCall(ctx, adm, call)
		emit("result", map[string]any{"call": call[0], "result": result, "error": errorText(err)})
	}
	emit("closed", nil)
}
