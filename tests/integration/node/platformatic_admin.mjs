// @platformatic/kafka 1.35.0 admin calls against kgroup serve: node platformatic_admin.mjs HOST:PORT TOPIC GROUP
// Prints one JSON object with what each call returned; any failure exits non-zero.
import { Admin, Producer, ConfigResourceTypes, IncrementalAlterConfigOperationTypes, stringSerializers } from '@platformatic/kafka'

const [bootstrap, topic, group] = process.argv.slice(2)
const admin = new Admin({ clientId: 'kgroup-node-test', bootstrapBrokers: [bootstrap] })
const producer = new Producer({ clientId: 'kgroup-node-test', bootstrapBrokers: [bootstrap], serializers: stringSerializers })
const out = {}
try {
  await admin.createTopics({ topics: [topic], partitions: 1 })
  await producer.send({ messages: Array.from({ length: 5 }, (_, i) => ({ topic, value: `v${i}`, partition: 0 })) })
  out.topics = (await admin.listTopics()).filter(t => t === topic)
  const described = await admin.describeConfigs({
    resources: [{ resourceType: ConfigResourceTypes.TOPIC, resourceName: topic, configurationKeys: ['retention.ms'] }]
  })
  out.configs = described[0].configs.map(c => [c.name, c.value])
  await admin.incrementalAlterConfigs({
    resources: [{
      resourceType: ConfigResourceTypes.GROUP,
      resourceName: group,
      configs: [{ name: 'consumer.heartbeat.interval.ms', configOperation: IncrementalAlterConfigOperationTypes.SET, value: '6000' }]
    }]
  })
  const groupConfigs = await admin.describeConfigs({
    resources: [{ resourceType: ConfigResourceTypes.GROUP, resourceName: group, configurationKeys: ['consumer.heartbeat.interval.ms'] }]
  })
  out.groupConfigs = groupConfigs[0].configs.map(c => [c.name, c.value])
  const deleted = await admin.deleteRecords({ topics: [{ name: topic, partitions: [{ partition: 0, offset: 3n }] }] })
  out.deleted = deleted.map(t => [t.name, t.partitions.map(p => [p.partition, Number(p.lowWatermark)])])
  const dirs = await admin.describeLogDirs({ topics: [{ name: topic, partitions: [0] }] })
  out.logDirs = dirs.length
} finally {
  await producer.close()
  await admin.close()
}
console.log(JSON.stringify(out))
