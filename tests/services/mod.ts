// Real services for tests: RabbitMQ, NATS, Mosquitto, Redis and PostgreSQL from their Debian
// packages (scripts/install/brokers.sh). Each `create*` reserves free ports and a temp directory;
// `start()` runs the server (as its system account when the tests run as root) and waits until it
// is ready, `stop()`/`start()` restart it on the same ports and data (outage tests), `freeze(true)`
// stops answering without closing connections (not PostgreSQL), `dispose()` ends it and
// removes the directory. Start one instance per test file and dispose of it in a `finally`:
//
//   const redis = await createRedis();
//   await redis.start();
//   try { ... redis.url ... } finally { await redis.dispose(); }
export { createMosquitto, createNats, createRedis, type UrlService } from "./light.ts";
export { createPostgres, type Postgres } from "./postgres.ts";
export { createRabbitMq, type RabbitMq } from "./rabbitmq.ts";
export { RealService } from "./service.ts";
