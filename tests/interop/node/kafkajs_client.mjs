// kafkajs 2.2.4 against kgroup, for tests/interop/test_node_clients.py:
//   node kafkajs_client.mjs '{"bootstrap": "H:P", "topic": T, "group": G, "count": N, "produce": MODE, ...}'
// MODE: plain | idempotent | transactional (one committed transaction of N records, and one
// aborted of 2). Then a consumer of group G reads T from the start until it has N records,
// commits, is described by the admin client, and disconnects (leaving the group).
// Options: "sasl": {"mechanism": "plain" | "scram-sha-256" | "scram-sha-512", "username", "password"},
// "ca": a CA file (TLS). Prints one JSON object; any failure exits non-zero.
import fs from 'node:fs'
import { Kafka, logLevel } from 'kafkajs'

const args = JSON.parse(process.argv[2])
const kafka = new Kafka({
  clientId: 'kafkajs-interop',
  brokers: [args.bootstrap],
  logLevel: logLevel.NOTHING,
  ssl: args.ca ? { ca: [fs.readFileSync(args.ca, 'utf8')] } : undefined,
  sasl: args.sasl
})
const out = { produced: 0, consumed: [] }
const admin = kafka.admin()
await admin.connect()
try {
  await admin.createTopics({ topics: [{ topic: args.topic, numPartitions: 2 }] })
  const messages = n => Array.from({ length: n }, (_, i) => ({ key: `k${i}`, value: `v${i}`, partition: i % 2 }))
  if (args.produce === 'transactional') {
    const producer = kafka.producer({ transactionalId: `${args.group}-txn`, idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    const aborted = await producer.transaction()
    await aborted.send({ topic: args.topic, messages: messages(2).map(m => ({ ...m, value: `aborted-${m.value}` })) })
    await aborted.abort()
    const txn = await producer.transaction()
    await txn.send({ topic: args.topic, messages: messages(args.count) })
    await txn.commit()
    await producer.disconnect()
  } else {
    const producer = kafka.producer({ idempotent: args.produce === 'idempotent', maxInFlightRequests: args.produce === 'idempotent' ? 1 : undefined })
    await producer.connect()
    await producer.send({ topic: args.topic, messages: messages(args.count) })
    await producer.disconnect()
  }
  out.produced = args.count
  const consumer = kafka.consumer({ groupId: args.group, readUncommitted: false, sessionTimeout: 10000 })
  await consumer.connect()
  await consumer.subscribe({ topic: args.topic, fromBeginning: true })
  let done
  const all = new Promise(resolve => { done = resolve })
  await consumer.run({
    eachMessage: async ({ message }) => {
      out.consumed.push(message.value.toString())
      if (out.consumed.length >= args.count) done()
    }
  })
  const timer = setTimeout(() => done(), 60000)
  await all
  clearTimeout(timer)
  const described = await admin.describeGroups([args.group])
  out.group = { state: described.groups[0].state, protocol: described.groups[0].protocol, members: described.groups[0].members.length }
  await consumer.disconnect()
  const offsets = await admin.fetchOffsets({ groupId: args.group, topics: [args.topic] })
  out.committed = offsets[0].partitions.map(p => [p.partition, Number(p.offset)]).sort((a, b) => a[0] - b[0])
} finally {
  await admin.disconnect()
}
console.log(JSON.stringify(out))
