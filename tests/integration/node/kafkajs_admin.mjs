// kafkajs 2.2.4 admin calls against kgroup serve: node kafkajs_admin.mjs HOST:PORT TOPIC
// Prints one JSON object with what each call returned; any failure exits non-zero.
import kafkajs from 'kafkajs'

const { Kafka, ConfigResourceTypes, logLevel } = kafkajs
const [bootstrap, topic] = process.argv.slice(2)
const kafka = new Kafka({ clientId: 'kgroup-node-test', brokers: [bootstrap], logLevel: logLevel.NOTHING })
const admin = kafka.admin()
const producer = kafka.producer()
const out = {}

await admin.connect()
await producer.connect()
try {
  out.created = await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true })
  await producer.send({ topic, messages: Array.from({ length: 6 }, (_, i) => ({ value: `v${i}`, partition: 0 })) })
  const all = await admin.fetchTopicMetadata()                 // no topics: every topic
  out.metadata = all.topics.map(t => ({ name: t.name, partitions: t.partitions.length }))
  const described = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms', 'cleanup.policy'] }]
  })
  out.configs = described.resources[0].configEntries.map(c => [c.configName, c.configValue])
  await admin.alterConfigs({
    validateOnly: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name: 'retention.ms', value: '3600000' }] }]
  })
  const after = await admin.describeConfigs({
    includeSynonyms: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms'] }]
  })
  out.altered = after.resources[0].configEntries.map(c => [c.configName, c.configValue])
  await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '4' }] })
  out.offsets = (await admin.fetchTopicOffsets(topic)).map(p => [p.partition, p.low, p.high])
  const cluster = await admin.describeCluster()
  out.cluster = { clusterId: cluster.clusterId, controller: cluster.controller, brokers: cluster.brokers.length }
} finally {
  await producer.disconnect()
  await admin.disconnect()
}
console.log(JSON.stringify(out))
