// Two idempotent @platformatic/kafka producers into one partition, one after the other and
// then at once, COUNT records each (one send each):
// node platformatic_two_producers.mjs PACKAGE HOST:PORT TOPIC COUNT
// PACKAGE is '@platformatic/kafka' (1.x) or '@platformatic/kafka-2' (2.x, an npm alias).
// Both majors ask InitProducerId with producerId 0 and epoch 0 rather than -1/-1, so a broker
// that reads that as "bump producer 0's epoch" gives every producer the same (id, epoch).
// Prints one JSON object: {acked: [values whose send resolved], failed: [messages]}; the
// test reads the partition back and checks every acknowledged value is stored exactly once.
const [pkg, bootstrap, topic, count] = process.argv.slice(2)
// @platformatic/kafka 2.x declares Node >= 22 and uses one Node 22 API, Promise.withResolvers
// (ES2024); every 2.x release does. On Node 20 it is supplied here, exactly as specified,
// before the package loads -- nothing else of 2.x needs Node 22.
Promise.withResolvers ??= function withResolvers () {
  let resolve, reject
  const promise = new this((res, rej) => { resolve = res; reject = rej })
  return { promise, resolve, reject }
}
const { Admin, Producer, stringSerializers } = await import(pkg)

const PER_PRODUCER = Number(count)
const acked = []
const failed = []

function producer (name) {
  return new Producer({
    clientId: `kgroup-two-producers-${name}`,
    bootstrapBrokers: [bootstrap],
    serializers: stringSerializers,
    idempotent: true,
    retries: 2
  })
}

async function sendAll (name) {
  const p = producer(name)
  try {
    for (let i = 0; i < PER_PRODUCER; i++) {
      const value = `${name}-${i}`
      try {
        await p.send({ messages: [{ topic, value, partition: 0 }] })
        acked.push(value)
      } catch (error) {
        failed.push(`${value}: ${error.message}`)
      }
    }
  } finally {
    await p.close()
  }
}

const admin = new Admin({ clientId: 'kgroup-two-producers', bootstrapBrokers: [bootstrap] })
try {
  await admin.createTopics({ topics: [topic], partitions: 1, replicas: 1 })
} finally {
  await admin.close()
}
await sendAll('first')                                  // one after the other ...
await sendAll('second')
await Promise.all([sendAll('third'), sendAll('fourth')]) // ... and at once
console.log(JSON.stringify({ acked, failed }))
