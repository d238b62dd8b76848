// Notification targets configured by the environment: STORE_NOTIFY_<KIND>_<ID>_<SETTING>.
// The settings of every kind are validated at start-up; a bad one stops the server naming it.
import { ConfigError } from "../config.ts";
import type { NotificationTarget, TargetKind } from "./target.ts";
import { AmqpTarget } from "./targets/amqp.ts";
import { type MqttQos, MqttTarget } from "./targets/mqtt.ts";
import { NatsTarget } from "./targets/nats.ts";
import { isValidTableName, PostgresTarget } from "./targets/postgres.ts";
import { RedisTarget } from "./targets/redis.ts";
import { WebhookTarget } from "./targets/webhook.ts";

export interface TargetSpec {
  kind: TargetKind;
  id: string;
  /** SETTING (upper case, as written after the id) -> value. */
  settings: Record<string, string>;
}

const KIND_NAMES: Record<string, TargetKind> = {
  WEBHOOK: "webhook",
  AMQP: "amqp",
  NATS: "nats",
  MQTT: "mqtt",
  REDIS: "redis",
  POSTGRES: "postgres",
};

/** Returns why a value is wrong, or undefined when it is fine. */
type Check = (value: string) => string | undefined;

interface KindRules {
  required: string[];
  /** Every accepted setting with its value check. */
  checks: Record<string, Check>;
}

const urlWith = (...schemes: string[]): Check => (value) => {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "is not a URL";
  }
  const scheme = url.protocol.slice(0, -1);
  if (!schemes.includes(scheme)) return `must be a ${schemes.join(" or ")} URL, not ${scheme}`;
  if (!url.hostname) return "has no host";
};
const anyText: Check = () => undefined;
const noWildcards = (wildcards: RegExp, what: string): Check => (value) =>
  wildcards.test(value) ? `is a single ${what}, without wildcards or spaces` : undefined;

const RULES: Record<TargetKind, KindRules> = {
  webhook: {
    required: ["URL"],
    checks: { URL: urlWith("http", "https"), AUTH_TOKEN: anyText },
  },
  amqp: {
    required: ["URL"],
    checks: { URL: urlWith("amqp", "amqps"), EXCHANGE: anyText, ROUTING_KEY: anyText },
  },
  nats: {
    required: ["URL", "SUBJECT"],
    checks: { URL: urlWith("nats", "tls"), SUBJECT: noWildcards(/[\s*>]/, "subject") },
  },
  mqtt: {
    required: ["URL", "TOPIC"],
    checks: {
      URL: urlWith("mqtt", "mqtts"),
      TOPIC: noWildcards(/[+#]/, "topic"),
      QOS: (v) => (/^[012]$/.test(v) ? undefined : "must be 0, 1 or 2"),
    },
  },
  redis: { required: ["URL", "KEY"], checks: { URL: urlWith("redis", "rediss"), KEY: anyText } },
  postgres: {
    required: ["URL", "TABLE"],
    checks: {
      URL: urlWith("postgres", "postgresql"),
      TABLE: (v) =>
        isValidTableName(v)
          ? undefined
          : "must be lower-case letters, digits and _ (table or schema.table)",
    },
  },
};

const PATTERN = /^STORE_NOTIFY_([A-Z]+)_([A-Za-z0-9-]+)_([A-Z][A-Z_]*)$/;

/** The variable that holds one setting of a target. */
export function variableName(spec: Pick<TargetSpec, "kind" | "id">, setting: string): string {
  return `STORE_NOTIFY_${spec.kind.toUpperCase()}_${spec.id}_${setting}`;
}

/** Reads every STORE_NOTIFY_<KIND>_<ID>_<SETTING> variable into one spec per (kind, id). */
export function parseTargetSpecs(env: Record<string, string>): TargetSpec[] {
  const specs = new Map<string, TargetSpec>();
  for (const [name, value] of Object.entries(env)) {
    const m = PATTERN.exec(name);
    if (!m) continue;
    const kind = KIND_NAMES[m[1]];
    if (!kind) continue;
    const [, , id, setting] = m;
    const check = RULES[kind].checks[setting];
    if (!check) throw new ConfigError(`${name}: ${m[1]} targets have no setting ${setting}`);
    const problem = check(value);
    if (problem) throw new ConfigError(`${name} ${problem}`);
    const key = `${kind}:${id}`;
    const spec = specs.get(key) ?? { kind, id, settings: {} };
    spec.settings[setting] = value;
    specs.set(key, spec);
  }
  for (const spec of specs.values()) {
    for (const required of RULES[spec.kind].required) {
      if (!spec.settings[required]) {
        throw new ConfigError(`${variableName(spec, required)} must be set`);
      }
    }
    if (spec.kind === "amqp" && !spec.settings.EXCHANGE && !spec.settings.ROUTING_KEY) {
      throw new ConfigError(
        `${variableName(spec, "EXCHANGE")} or ${variableName(spec, "ROUTING_KEY")} must be set`,
      );
    }
  }
  return [...specs.values()];
}

/** Builds the target a spec describes (no connection is made until the first send). */
export function openTarget(spec: TargetSpec): NotificationTarget {
  try {
    return buildTarget(spec);
  } catch (err) {
    throw new ConfigError(
      `STORE_NOTIFY_${spec.kind.toUpperCase()}_${spec.id}_*: ${
        err instanceof Error ? err.message : err
      }`,
    );
  }
}

function buildTarget({ kind, id, settings: s }: TargetSpec): NotificationTarget {
  switch (kind) {
    case "webhook":
      return new WebhookTarget({ id, url: s.URL, authToken: s.AUTH_TOKEN });
    case "amqp":
      return new AmqpTarget({
        id,
        url: s.URL,
        exchange: s.EXCHANGE ?? "",
        routingKey: s.ROUTING_KEY ?? "",
      });
    case "nats":
      return new NatsTarget({ id, url: s.URL, subject: s.SUBJECT });
    case "mqtt":
      return new MqttTarget({ id, url: s.URL, topic: s.TOPIC, qos: Number(s.QOS ?? 1) as MqttQos });
    case "redis":
      return new RedisTarget({ id, url: s.URL, key: s.KEY });
    case "postgres":
      return new PostgresTarget({ id, url: s.URL, table: s.TABLE });
  }
}
