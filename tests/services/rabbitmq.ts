// RabbitMQ for the tests. Start-up is kept short: its own node name, its own port mapper (epmd)
// on a free port, no plugins, mnesia and logs in the temp directory, nothing read from /etc.
import { freePort, waitForPort } from "./process.ts";
import { childPids, RealService, type ServiceDefinition, serviceDir } from "./service.ts";

export interface RabbitMq extends RealService {
  /** amqp://guest:guest@127.0.0.1:<port>/ */
  readonly url: string;
}

export async function createRabbitMq(): Promise<RabbitMq> {
  const [amqpPort, distPort, epmdPort] = [await freePort(), await freePort(), await freePort()];
  const dir = await serviceDir("rabbitmq");
  const node = `store-test-${amqpPort}@localhost`;
  const env = (dir: string): Record<string, string> => ({
    PATH: Deno.env.get("PATH") ?? "/usr/sbin:/usr/bin:/sbin:/bin",
    HOME: dir,
    LANG: "C.UTF-8",
    RABBITMQ_NODENAME: node,
    RABBITMQ_NODE_IP_ADDRESS: "127.0.0.1",
    RABBITMQ_NODE_PORT: String(amqpPort),
    RABBITMQ_DIST_PORT: String(distPort),
    ERL_EPMD_PORT: String(epmdPort),
    ERL_EPMD_ADDRESS: "127.0.0.1",
    RABBITMQ_CONF_ENV_FILE: `${dir}/rabbitmq-env.conf`,
    RABBITMQ_CONFIG_FILE: `${dir}/rabbitmq.config`,
    RABBITMQ_ADVANCED_CONFIG_FILE: `${dir}/advanced.config`,
    RABBITMQ_ENABLED_PLUGINS_FILE: `${dir}/enabled_plugins`,
    RABBITMQ_PLUGINS_EXPAND_DIR: `${dir}/plugins`,
    RABBITMQ_MNESIA_BASE: `${dir}/mnesia`,
    RABBITMQ_LOG_BASE: `${dir}/log`,
    RABBITMQ_PID_FILE: `${dir}/rabbitmq.pid`,
    // Schedulers sleep instead of busy-waiting: less CPU taken from the tests on small machines.
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS: "+sbwt none +sbwtdcpu none +sbwtdio none",
  });
  const def: ServiceDefinition = {
    name: "RabbitMQ",
    user: "rabbitmq",
    startTimeoutMs: 60_000,
    stopSignal: "SIGTERM",
    async prepare(dir) {
      await Deno.writeTextFile(`${dir}/rabbitmq-env.conf`, "");
      await Deno.writeTextFile(`${dir}/enabled_plugins`, "[].\n");
      // Erlang terms rather than rabbitmq.conf: the .conf format goes through a schema
      // translation (cuttlefish) that costs a noticeable part of the start-up.
      await Deno.writeTextFile(
        `${dir}/rabbitmq.config`,
        `[{rabbit, [{tcp_listeners, [{"127.0.0.1", ${amqpPort}}]}, {log, [` +
          `{file, [{level, ${Deno.env.get("RMQ_LOG_LEVEL") ?? "warning"}}]}, ` +
          `{console, [{enabled, false}]}]}]}].\n`,
      );
      for (const sub of ["plugins", "mnesia", "log"]) await Deno.mkdir(`${dir}/${sub}`);
    },
    launch: (dir) => ({
      cmd: "/usr/lib/rabbitmq/bin/rabbitmq-server",
      args: [],
      env: env(dir),
      logFile: `${dir}/log/${node}.log`,
    }),
    // The start script runs the Erlang VM (beam.smp) as its one child.
    async serverPid(wrapper) {
      for (const pid of await childPids(wrapper)) {
        const comm = (await Deno.readTextFile(`/proc/${pid}/comm`)).trim();
        if (comm.startsWith("beam")) return pid;
      }
      throw new Error("RabbitMQ's Erlang VM is not a child of its start script");
    },
    // RabbitMQ opens its AMQP listener as the last step of booting.
    ready: (timeoutMs, exited) => waitForPort(amqpPort, timeoutMs, exited),
    async cleanup() {
      // The port mapper started by the node outlives it; ask ours (by its port) to exit.
      await new Deno.Command("epmd", {
        args: ["-kill"],
        env: { ERL_EPMD_PORT: String(epmdPort) },
        stdout: "null",
        stderr: "null",
      }).output().catch(() => {});
    },
  };
  const service = new RealService(def, dir) as RabbitMq;
  Object.defineProperty(service, "url", { value: `amqp://guest:guest@127.0.0.1:${amqpPort}/` });
  return service;
}
