package main

// The sarama roles: a consumer-group member (classic protocol: range, roundrobin, sticky,
// cooperative-sticky; static with -instance), a sync producer (idempotent, or transactional
// with -txn), and the offsets API (an OffsetManager's commits, the ClusterAdmin's group
// calls).

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"sort"
	"time"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
)

// scramClient is sarama's SCRAMClient over xdg-go/scram (sarama leaves the choice to the user).
type scramClient struct {
	*scram.ClientConversation
	hash scram.HashGeneratorFcn
}

func (c *scramClient) Begin(user, password, authzID string) error {
	client, err := c.hash.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	c.ClientConversation = client.NewConversation()
	return nil
}

func (c *scramClient) Step(challenge string) (string, error) {
	return c.ClientConversation.Step(challenge)
}
func (c *scramClient) Done() bool { return c.ClientConversation.Done() }

func saramaConfig(id string) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_9_0_0
	cfg.ClientID = id
	if *clientID != "" {
		cfg.ClientID = *clientID
	}
	if t := tlsConfig(); t != nil {
		cfg.Net.TLS.Enable = true
		cfg.Net.TLS.Config = t
	}
	switch *saslMech {
	case "":
	case "PLAIN":
		cfg.Net.SASL.Enable, cfg.Net.SASL.Mechanism = true, sarama.SASLTypePlaintext
	case "SCRAM-SHA-256":
		cfg.Net.SASL.Enable, cfg.Net.SASL.Mechanism = true, sarama.SASLTypeSCRAMSHA256
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: sha256.New} }
	case "SCRAM-SHA-512":
		cfg.Net.SASL.Enable, cfg.Net.SASL.Mechanism = true, sarama.SASLTypeSCRAMSHA512
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: sha512.New} }
	default:
		fail(fmt.Errorf("unknown SASL mechanism %q", *saslMech))
	}
	cfg.Net.SASL.User, cfg.Net.SASL.Password = *user, *password
	return cfg
}

type saramaHandler struct{ s *stopper }

// Setup and Cleanup bracket a whole session: eager rebalancing ends it, cooperative keeps it
// and only adds or ends claims. So ownership is reported per claim: "assigned" when its
// ConsumeClaim starts, "revoked" when it returns (its Messages channel closed).
func (h saramaHandler) Setup(sarama.ConsumerGroupSession) error { return nil }

func (h saramaHandler) Cleanup(sess sarama.ConsumerGroupSession) error {
	sess.Commit()
	return nil
}

func (h saramaHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	tp := [][]any{{claim.Topic(), claim.Partition()}}
	emit("assigned", map[string]any{"partitions": tp, "generation": sess.GenerationID()})
	defer func() {
		sess.Commit()
		emit("revoked", map[string]any{"partitions": tp})
	}()
	for {
		select {
		case msg, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			emit("records", map[string]any{"records": [][]any{{msg.Topic, msg.Partition, msg.Offset,
				string(msg.Key), string(msg.Value)}}})
			sess.MarkMessage(msg, "")
			sess.Commit()
			h.s.saw(1)
		case <-sess.Context().Done():
			return nil
		}
	}
}

func saramaConsume() {
	cfg := saramaConfig("sarama")
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	strategies := map[string]sarama.BalanceStrategy{"range": sarama.NewBalanceStrategyRange(),
		"roundrobin": sarama.NewBalanceStrategyRoundRobin(), "sticky": sarama.NewBalanceStrategySticky(),
		"cooperative-sticky": sarama.NewBalanceStrategyCooperativeSticky()}
	strategy, ok := strategies[*balancer]
	if !ok {
		fail(fmt.Errorf("unknown balancer %q", *balancer))
	}
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{strategy}
	if *instance != "" {
		cfg.Consumer.Group.InstanceId = *instance
	}
	cg, err := sarama.NewConsumerGroup(split(*brokers), *group, cfg)
	if err != nil {
		fail(err)
	}
	go func() {
		for err := range cg.Errors() {
			emit("error", map[string]any{"error": err.Error()})
		}
	}()
	emit("ready", nil)
	s := newStopper()
	ctx, cancel := context.WithCancel(s.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, split(*topics), saramaHandler{s}); err != nil && ctx.Err() == nil {
				emit("error", map[string]any{"error": err.Error()})
				time.Sleep(200 * time.Millisecond)
			}
		}
	}()
	for !s.done() {
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	<-done
	cg.Close()
	emit("closed", nil)
}

func saramaProduce() {
	cfg := saramaConfig("sarama-producer")
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	if *idempotent || *txnID != "" {
		cfg.Producer.Idempotent = true
		cfg.Net.MaxOpenRequests = 1
	}
	if *txnID != "" {
		cfg.Producer.Transaction.ID = *txnID
	}
	p, err := sarama.NewSyncProducer(split(*brokers), cfg)
	if err != nil {
		fail(err)
	}
	defer p.Close()
	if *txnID != "" {
		if err := p.BeginTxn(); err != nil {
			fail(err)
		}
	}
	var rows [][]any
	for i := 0; i < *count; i++ {
		msg := &sarama.ProducerMessage{Topic: split(*topics)[0], Partition: int32(i % *partitions),
			Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)), Value: sarama.StringEncoder(fmt.Sprintf("%s%d", *prefix, i))}
		partition, offset, err := p.SendMessage(msg)
		rows = append(rows, []any{msg.Topic, partition, offset, errorText(err)})
	}
	emit("produced", map[string]any{"records": rows})
	if *txnID != "" {
		end := p.CommitTxn
		if *abort {
			end = p.AbortTxn
		}
		if err := end(); err != nil {
			fail(err)
		}
		emit("ended", map[string]any{"committed": !*abort})
	}
	emit("closed", nil)
}

// saramaOffsets commits offset N+1 for every partition of -topic through an OffsetManager
// (N = its partition number), then reads the group back with the ClusterAdmin, deletes
// partition 0's offset and reads again.
func saramaOffsets() {
	cfg := saramaConfig("sarama-offsets")
	client, err := sarama.NewClient(split(*brokers), cfg)
	if err != nil {
		fail(err)
	}
	defer client.Close()
	topic := split(*topics)[0]
	om, err := sarama.NewOffsetManagerFromClient(*group, client)
	if err != nil {
		fail(err)
	}
	for p := 0; p < *partitions; p++ {
		pom, err := om.ManagePartition(topic, int32(p))
		if err != nil {
			fail(err)
		}
		pom.MarkOffset(int64(p+1), "meta")
		pom.Close()
	}
	om.Commit()
	om.Close()
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		fail(err)
	}
	read := func() map[string]any {
		resp, err := admin.ListConsumerGroupOffsets(*group, nil)
		if err != nil {
			fail(err)
		}
		out := map[string]any{}
		for t, ps := range resp.Blocks {
			for p, b := range ps {
				var err error
				if b.Err != sarama.ErrNoError {
					err = b.Err
				}
				out[fmt.Sprintf("%s:%d", t, p)] = []any{b.Offset, b.Metadata, errorText(err)}
			}
		}
		return out
	}
	emit("result", map[string]any{"call": "committed", "result": read()})
	groups, err := admin.ListConsumerGroups()
	if err != nil {
		fail(err)
	}
	var names []string
	for g := range groups {
		names = append(names, g)
	}
	sort.Strings(names)
	emit("result", map[string]any{"call": "listGroups", "result": names})
	described, err := admin.DescribeConsumerGroups([]string{*group})
	if err != nil {
		fail(err)
	}
	emit("result", map[string]any{"call": "describe", "result": map[string]any{
		"state": described[0].State, "protocolType": described[0].ProtocolType}})
	emit("result", map[string]any{"call": "deleteOffset", "result": errorText(admin.DeleteConsumerGroupOffset(*group, topic, 0))})
	emit("result", map[string]any{"call": "afterDelete", "result": read()})
	emit("result", map[string]any{"call": "deleteGroup", "result": errorText(admin.DeleteConsumerGroup(*group))})
	emit("closed", nil)
}
