// @platformatic/kafka 1.35.0 against kgroup, for tests/interop/test_node_clients.py:
//   node platformatic_client.mjs '{"bootstrap": "H:P", "topic": T, "group": G, "count": N, "produce": MODE, ...}'
// MODE: plain | idempotent | transactional (one committed transaction of N records, and one
// aborted of 2). Then a consumer of group G ("protocol": classic | consumer, "instance": a
// group.instance.id) reads T from the start until it has N records, commits, and closes.
// Options: "sasl": {"mechanism": "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512", "username",
// "password"}, "ca": a CA file (TLS). Prints one JSON object; any failure exits non-zero.
import fs from 'node:fs'
import { Admin, Consumer, FetchIsolationLevels, MessagesStreamModes, Producer, stringDeserializers, stringSerializers } from '@platformatic/kafka'

const args = JSON.parse(process.argv[2])
const base = {
  clientId: 'platformatic-interop',
  bootstrapBrokers: [args.bootstrap],
  sasl: args.sasl,
  tls: args.ca ? { ca: fs.readFileSync(args.ca, 'utf8'), servername: 'localhost' } : undefined
}
const out = { produced: 0, consumed: [] }
const admin = new Admin(base)
try {
  await admin.createTopics({ topics: [args.topic], partitions: 2 })
  const messages = (n, prefix = 'v') => Array.from({ length: n }, (_, i) => ({ topic: args.topic, key: `k${i}`, value: `${prefix}${i}`, partition: i % 2 }))
  const producer = new Producer({
    ...base,
    serializers: stringSerializers,
    idempotent: args.produce !== 'plain',
    transactionalId: args.produce === 'transactional' ? `${args.group}-txn` : undefined
  })
  if (args.produce === 'transactional') {
    const aborted = await producer.beginTransaction()
    await aborted.send({ messages: messages(2, 'aborted-v') })
    await aborted.abort()
    const txn = await producer.beginTransaction()
    await txn.send({ messages: messages(args.count) })
    await txn.commit()
  } else {
    await producer.send({ messages: messages(args.count) })
  }
  await producer.close()
  out.produced = args.count
  const consumer = new Consumer({
    ...base,
    groupId: args.group,
    deserializers: stringDeserializers,
    groupProtocol: args.protocol ?? 'classic',
    groupInstanceId: args.instance,
    isolationLevel: FetchIsolationLevels.READ_COMMITTED
  })
  const stream = await consumer.consume({ topics: [args.topic], mode: MessagesStreamModes.EARLIEST, autocommit: true })
  const timer = setTimeout(() => stream.close(), 60000)
  for await (const message of stream) {
    out.consumed.push(message.value)
    await message.commit()
    if (out.consumed.length >= args.count) break
  }
  clearTimeout(timer)
  if (args.protocol !== 'consumer') {
    const groups = await admin.describeGroups({ groups: [args.group] })
    const group = groups.get(args.group)
    out.group = { state: group.state, instances: [...group.members.values()].map(m => m.groupInstanceId) }
  }
  await stream.close()
  await consumer.close()
} finally {
  await admin.close()
}
console.log(JSON.stringify(out))
