// NATS, Mosquitto and Redis for the tests: each one process, one free port, one temp directory.
import { freePort, waitForPort } from "./process.ts";
import { RealService, serviceDir } from "./service.ts";

export interface UrlService extends RealService {
  readonly url: string;
  readonly port: number;
}

function withUrl(service: RealService, url: string, port: number): UrlService {
  Object.defineProperty(service, "url", { value: url });
  Object.defineProperty(service, "port", { value: port });
  return service as UrlService;
}

export async function createNats(): Promise<UrlService> {
  const port = await freePort();
  const dir = await serviceDir("nats");
  const service = new RealService({
    name: "NATS",
    user: "nats",
    startTimeoutMs: 15_000,
    stopSignal: "SIGTERM",
    prepare: () => Promise.resolve(),
    launch: (dir) => ({
      cmd: "nats-server",
      args: ["-a", "127.0.0.1", "-p", String(port), "-l", `${dir}/nats.log`],
      logFile: `${dir}/nats.log`,
    }),
    ready: (timeoutMs, exited) => waitForPort(port, timeoutMs, exited),
  }, dir);
  return withUrl(service, `nats://127.0.0.1:${port}`, port);
}

export async function createMosquitto(): Promise<UrlService> {
  const port = await freePort();
  const dir = await serviceDir("mosquitto");
  const service = new RealService({
    name: "Mosquitto",
    user: "mosquitto",
    startTimeoutMs: 15_000,
    stopSignal: "SIGTERM",
    prepare: (dir) =>
      Deno.writeTextFile(
        `${dir}/mosquitto.conf`,
        [
          `listener ${port} 127.0.0.1`,
          "allow_anonymous true",
          "persistence false",
          `log_dest file ${dir}/mosquitto.log`,
          "",
        ].join("\n"),
      ),
    launch: (dir) => ({
      cmd: "mosquitto",
      args: ["-c", `${dir}/mosquitto.conf`],
      logFile: `${dir}/mosquitto.log`,
    }),
    ready: (timeoutMs, exited) => waitForPort(port, timeoutMs, exited),
  }, dir);
  return withUrl(service, `mqtt://127.0.0.1:${port}`, port);
}

export async function createRedis(): Promise<UrlService> {
  const port = await freePort();
  const dir = await serviceDir("redis");
  const service = new RealService({
    name: "Redis",
    user: "redis",
    startTimeoutMs: 15_000,
    stopSignal: "SIGTERM",
    prepare: () => Promise.resolve(),
    launch: (dir) => ({
      cmd: "redis-server",
      args: [
        "--port",
        String(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        dir,
        "--save",
        "",
        "--appendonly",
        "no",
        "--logfile",
        `${dir}/redis.log`,
        "--daemonize",
        "no",
      ],
      logFile: `${dir}/redis.log`,
    }),
    ready: (timeoutMs, exited) => waitForPort(port, timeoutMs, exited),
  }, dir);
  return withUrl(service, `redis://127.0.0.1:${port}`, port);
}
