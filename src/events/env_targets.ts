// Notification targets configured by the environment: STORE_NOTIFY_<KIND>_<ID>_<SETTING>.
// The settings of every kind are validated at start-up; a bad one stops the server naming it.
import { ConfigError } from "../config.ts";
import type { NotificationTarget, TargetKind } from "./target.ts";
import { WebhookTarget } from "./targets/webhook.ts";

export interface TargetSpec {
  kind: TargetKind;
  id: string;
  /** SETTING (upper case, as written after the id) -> value. */
  settings: Record<string, string>;
}

const KIND_NAMES: Record<string, TargetKind> = { WEBHOOK: "webhook" };

/** Settings each kind accepts, and which of them are required. */
const SETTINGS: Record<TargetKind, { known: string[]; required: string[] }> = {
  webhook: { known: ["URL", "AUTH_TOKEN"], required: ["URL"] },
  amqp: { known: [], required: [] },
  nats: { known: [], required: [] },
  mqtt: { known: [], required: [] },
  redis: { known: [], required: [] },
  postgres: { known: [], required: [] },
};

const PATTERN = /^STORE_NOTIFY_([A-Z]+)_([A-Za-z0-9-]+)_([A-Z][A-Z_]*)$/;

/** Reads every STORE_NOTIFY_<KIND>_<ID>_<SETTING> variable into one spec per (kind, id). */
export function parseTargetSpecs(env: Record<string, string>): TargetSpec[] {
  const specs = new Map<string, TargetSpec>();
  for (const [name, value] of Object.entries(env)) {
    const m = PATTERN.exec(name);
    if (!m) continue;
    const kind = KIND_NAMES[m[1]];
    if (!kind) continue;
    const [, , id, setting] = m;
    if (!SETTINGS[kind].known.includes(setting)) {
      throw new ConfigError(`${name}: ${m[1]} targets have no setting ${setting}`);
    }
    const key = `${kind}:${id}`;
    const spec = specs.get(key) ?? { kind, id, settings: {} };
    spec.settings[setting] = value;
    specs.set(key, spec);
  }
  for (const spec of specs.values()) {
    for (const required of SETTINGS[spec.kind].required) {
      if (!spec.settings[required]) {
        throw new ConfigError(
          `STORE_NOTIFY_${spec.kind.toUpperCase()}_${spec.id}_${required} must be set`,
        );
      }
    }
  }
  return [...specs.values()];
}

/** Builds the target a spec describes (no connection is made until the first send). */
export function openTarget(spec: TargetSpec): NotificationTarget {
  switch (spec.kind) {
    case "webhook":
      try {
        return new WebhookTarget({
          id: spec.id,
          url: spec.settings.URL,
          authToken: spec.settings.AUTH_TOKEN,
        });
      } catch (err) {
        throw new ConfigError(
          `STORE_NOTIFY_WEBHOOK_${spec.id}_URL: ${err instanceof Error ? err.message : err}`,
        );
      }
    default:
      throw new ConfigError(`Notification targets of kind ${spec.kind} are not available`);
  }
}
