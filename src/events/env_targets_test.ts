import { assert, assertEquals } from "../../tests/integration/assert.ts";
import { ConfigError } from "../config.ts";
import { openTarget, parseTargetSpecs } from "./env_targets.ts";

/** The ConfigError message parseTargetSpecs throws for `env`. */
function refusal(env: Record<string, string>): string {
  try {
    parseTargetSpecs(env);
  } catch (err) {
    assert(err instanceof ConfigError, `not a ConfigError: ${err}`);
    return err.message;
  }
  throw new Error(`accepted ${JSON.stringify(env)}`);
}

Deno.test("every kind is read with its settings, one spec per kind and id", () => {
  const specs = parseTargetSpecs({
    STORE_NOTIFY_WEBHOOK_hook1_URL: "https://hooks.example/in",
    STORE_NOTIFY_WEBHOOK_hook1_AUTH_TOKEN: "t0ken",
    STORE_NOTIFY_AMQP_main_URL: "amqp://u:p@rabbit:5672/vh",
    STORE_NOTIFY_AMQP_main_EXCHANGE: "store-events",
    STORE_NOTIFY_AMQP_main_ROUTING_KEY: "objects.created",
    "STORE_NOTIFY_NATS_n-1_URL": "nats://nats:4222",
    "STORE_NOTIFY_NATS_n-1_SUBJECT": "store.events",
    STORE_NOTIFY_MQTT_M1_URL: "mqtts://broker:8883",
    STORE_NOTIFY_MQTT_M1_TOPIC: "store/events",
    STORE_NOTIFY_MQTT_M1_QOS: "2",
    STORE_NOTIFY_REDIS_r_URL: "redis://:pw@redis:6379/2",
    STORE_NOTIFY_REDIS_r_KEY: "store:events",
    STORE_NOTIFY_POSTGRES_pg_URL: "postgresql://store@db/notify",
    STORE_NOTIFY_POSTGRES_pg_TABLE: "audit.store_events",
    STORE_NOTIFY_QUEUE_LIMIT: "1000",
    STORE_REGION: "us-east-1",
  });
  const byKind = Object.fromEntries(specs.map((s) => [s.kind, s]));
  assertEquals(Object.keys(byKind).sort(), [
    "amqp",
    "mqtt",
    "nats",
    "postgres",
    "redis",
    "webhook",
  ]);
  assertEquals(byKind.amqp, {
    kind: "amqp",
    id: "main",
    settings: {
      URL: "amqp://u:p@rabbit:5672/vh",
      EXCHANGE: "store-events",
      ROUTING_KEY: "objects.created",
    },
  });
  assertEquals(byKind.nats.id, "n-1");
  assertEquals(byKind.mqtt.settings.QOS, "2");
  assertEquals(byKind.webhook.settings.AUTH_TOKEN, "t0ken");
  assertEquals(byKind.postgres.settings.TABLE, "audit.store_events");
});

Deno.test("two ids of one kind are two targets", () => {
  const specs = parseTargetSpecs({
    STORE_NOTIFY_REDIS_a_URL: "redis://h1",
    STORE_NOTIFY_REDIS_a_KEY: "k1",
    STORE_NOTIFY_REDIS_b_URL: "redis://h2",
    STORE_NOTIFY_REDIS_b_KEY: "k2",
  });
  assertEquals(specs.map((s) => `${s.id}:${s.settings.KEY}`).sort(), ["a:k1", "b:k2"]);
});

Deno.test("a missing required setting is refused naming the variable", () => {
  assertEquals(
    refusal({ STORE_NOTIFY_NATS_n_URL: "nats://h:4222" }),
    "STORE_NOTIFY_NATS_n_SUBJECT must be set",
  );
  assertEquals(
    refusal({ STORE_NOTIFY_POSTGRES_p_TABLE: "events" }),
    "STORE_NOTIFY_POSTGRES_p_URL must be set",
  );
  assertEquals(
    refusal({ STORE_NOTIFY_MQTT_m_URL: "mqtt://h", STORE_NOTIFY_MQTT_m_TOPIC: "" }),
    "STORE_NOTIFY_MQTT_m_TOPIC must be set",
  );
  assertEquals(
    refusal({ STORE_NOTIFY_AMQP_a_URL: "amqp://h" }),
    "STORE_NOTIFY_AMQP_a_EXCHANGE or STORE_NOTIFY_AMQP_a_ROUTING_KEY must be set",
  );
});

Deno.test("an unknown setting is refused naming the variable", () => {
  assertEquals(
    refusal({
      STORE_NOTIFY_REDIS_r_URL: "redis://h",
      STORE_NOTIFY_REDIS_r_KEY: "k",
      STORE_NOTIFY_REDIS_r_TOPIC: "t",
    }),
    "STORE_NOTIFY_REDIS_r_TOPIC: REDIS targets have no setting TOPIC",
  );
});

Deno.test("bad values are refused naming the variable", () => {
  const cases: [Record<string, string>, string][] = [
    [
      { STORE_NOTIFY_AMQP_a_URL: "http://h", STORE_NOTIFY_AMQP_a_ROUTING_KEY: "k" },
      "STORE_NOTIFY_AMQP_a_URL must be a amqp or amqps URL, not http",
    ],
    [
      { STORE_NOTIFY_NATS_n_URL: "not a url", STORE_NOTIFY_NATS_n_SUBJECT: "s" },
      "STORE_NOTIFY_NATS_n_URL is not a URL",
    ],
    [
      { STORE_NOTIFY_NATS_n_URL: "nats://h", STORE_NOTIFY_NATS_n_SUBJECT: "store.>" },
      "STORE_NOTIFY_NATS_n_SUBJECT is a single subject, without wildcards or spaces",
    ],
    [
      { STORE_NOTIFY_MQTT_m_URL: "mqtt://h", STORE_NOTIFY_MQTT_m_TOPIC: "a/+/b" },
      "STORE_NOTIFY_MQTT_m_TOPIC is a single topic, without wildcards or spaces",
    ],
    [{
      STORE_NOTIFY_MQTT_m_URL: "mqtt://h",
      STORE_NOTIFY_MQTT_m_TOPIC: "t",
      STORE_NOTIFY_MQTT_m_QOS: "3",
    }, "STORE_NOTIFY_MQTT_m_QOS must be 0, 1 or 2"],
    [{
      STORE_NOTIFY_MQTT_m_URL: "mqtt://h",
      STORE_NOTIFY_MQTT_m_TOPIC: "t",
      STORE_NOTIFY_MQTT_m_QOS: "01",
    }, "STORE_NOTIFY_MQTT_m_QOS must be 0, 1 or 2"],
    [
      { STORE_NOTIFY_MQTT_m_URL: "ws://h", STORE_NOTIFY_MQTT_m_TOPIC: "t" },
      "STORE_NOTIFY_MQTT_m_URL must be a mqtt or mqtts URL, not ws",
    ],
    [
      { STORE_NOTIFY_REDIS_r_URL: "redis:///nohost", STORE_NOTIFY_REDIS_r_KEY: "k" },
      "STORE_NOTIFY_REDIS_r_URL has no host",
    ],
    [
      { STORE_NOTIFY_POSTGRES_p_URL: "mysql://h/db", STORE_NOTIFY_POSTGRES_p_TABLE: "t" },
      "STORE_NOTIFY_POSTGRES_p_URL must be a postgres or postgresql URL, not mysql",
    ],
    [
      {
        STORE_NOTIFY_POSTGRES_p_URL: "postgres://h/db",
        STORE_NOTIFY_POSTGRES_p_TABLE: "events;drop",
      },
      "STORE_NOTIFY_POSTGRES_p_TABLE must be lower-case letters, digits and _ (table or schema.table)",
    ],
    [
      { STORE_NOTIFY_POSTGRES_p_URL: "postgres://h/db", STORE_NOTIFY_POSTGRES_p_TABLE: "Events" },
      "STORE_NOTIFY_POSTGRES_p_TABLE must be lower-case letters, digits and _ (table or schema.table)",
    ],
    [
      { STORE_NOTIFY_WEBHOOK_w_URL: "ftp://h/x" },
      "STORE_NOTIFY_WEBHOOK_w_URL must be a http or https URL, not ftp",
    ],
  ];
  for (const [env, expected] of cases) assertEquals(refusal(env), expected);
});

Deno.test("variables that are not target settings are left alone", () => {
  assertEquals(
    parseTargetSpecs({
      STORE_NOTIFY_WEBHOOK_ALLOW: "10.0.0.0/8",
      STORE_NOTIFY_QUEUE_LIMIT: "100",
      STORE_NOTIFY_KAFKA_k_URL: "kafka://h",
      STORE_NOTIFY_redis_r_URL: "redis://h",
    }),
    [],
  );
});

Deno.test("openTarget builds each kind without connecting", async () => {
  const specs = parseTargetSpecs({
    STORE_NOTIFY_WEBHOOK_w_URL: "http://127.0.0.1:1/hook",
    STORE_NOTIFY_AMQP_a_URL: "amqp://127.0.0.1:1",
    STORE_NOTIFY_AMQP_a_ROUTING_KEY: "q",
    STORE_NOTIFY_NATS_n_URL: "nats://127.0.0.1:1",
    STORE_NOTIFY_NATS_n_SUBJECT: "s",
    STORE_NOTIFY_MQTT_m_URL: "mqtt://127.0.0.1:1",
    STORE_NOTIFY_MQTT_m_TOPIC: "t",
    STORE_NOTIFY_REDIS_r_URL: "redis://127.0.0.1:1",
    STORE_NOTIFY_REDIS_r_KEY: "k",
    STORE_NOTIFY_POSTGRES_p_URL: "postgres://u@127.0.0.1:1/db",
    STORE_NOTIFY_POSTGRES_p_TABLE: "events",
  });
  for (const spec of specs) {
    const target = openTarget(spec);
    assertEquals([target.kind, target.id], [spec.kind, spec.id]);
    await target.close();
  }
});
