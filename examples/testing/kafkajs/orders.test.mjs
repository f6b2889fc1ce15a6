// The orders app's fenced-commit test from kafkajs, driving kgroup's control API over HTTP.
//
//   kgroup serve --listen 127.0.0.1:9092 --control-listen 127.0.0.1:9093 --data-dir /tmp/k &
//   KAFKA_BOOTSTRAP=127.0.0.1:9092 KGROUP_CONTROL=127.0.0.1:9093 node --test orders.test.mjs
//
// Node's own test runner and fetch(); kafkajs 2.2 is the client under test.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Kafka, logLevel } from "kafkajs";

const bootstrap = process.env.KAFKA_BOOTSTRAP ?? "127.0.0.1:9092";
const control = `http://${process.env.KGROUP_CONTROL ?? "127.0.0.1:9093"}`;

// One call of the control API: JSON in, JSON out, an error's one-line reason thrown.
async function kgroup(method, path, body) {
  const response = await fetch(control + path, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = await response.json();
  if (!response.ok) throw new Error(`${response.status} ${answer.error}`);
  return answer;
}

async function eventually(condition, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

test("a fenced commit loses no order", async () => {
  const kafka = new Kafka({ brokers: [bootstrap], clientId: "orders-app-js", logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: "orders-js", numPartitions: 3 }] });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  const produce = (first, count) =>
    producer.send({
      topic: "orders-js",
      messages: Array.from({ length: count }, (_, i) => ({ key: `order-${first + i}`, value: `${first + i}` })),
    });

  // The app: stores each order by key (idempotent), kafkajs commits after each batch.
  const orders = new Map();
  const consumer = kafka.consumer({ groupId: "orders-app-js", heartbeatInterval: 500 });
  await consumer.connect();
  await consumer.subscribe({ topic: "orders-js", fromBeginning: true });
  await consumer.run({ eachMessage: async ({ message }) => { orders.set(message.key.toString(), message.value.toString()); } });
  try {
    const stable = await kgroup("GET", "/groups/orders-app-js/wait?state=Stable&members=1&timeout_ms=30000");
    assert.equal(stable.members[0].client_id, "orders-app-js");
    await produce(0, 50);
    await eventually(() => orders.size === 50);

    // The next commit is refused as from an old generation: kafkajs must rejoin, lose nothing.
    const { id } = await kgroup("POST", "/faults", {
      api: "OffsetCommit", error: "ILLEGAL_GENERATION", group: "orders-app-js", count: 1,
    });
    await produce(50, 50);
    await eventually(async () => orders.size === 100 && (await kgroup("GET", "/faults")).faults.length === 0);
    const after = await kgroup("GET", "/groups/orders-app-js/wait?state=Stable&members=1&timeout_ms=30000");
    assert.deepEqual(after.members[0].assignment, { "orders-js": [0, 1, 2] });
    await assert.rejects(kgroup("DELETE", `/faults/${id}`), /404/);   // used up: gone
  } finally {
    await consumer.disconnect();
    await producer.disconnect();
  }
});
