/*
 * Benchmark aid: makes fsync and fdatasync of the process it is preloaded into take longer, to
 * see how the server behaves on a slow disk (a NAS's spinning drive takes 5-20 ms per flush).
 *
 *   gcc -shared -fPIC -O2 -o /tmp/slow_fsync.so scripts/slow_fsync.c -ldl
 *   printf 'LD_PRELOAD=/tmp/slow_fsync.so\nSLOW_FSYNC_MS=8\n' > /tmp/slow.env
 *   deno task bench --sizes 4k --server-env /tmp/slow.env
 *
 * Each call sleeps SLOW_FSYNC_MS (default 8) before the real one. Calls from different threads
 * sleep at the same time, which a real disk does only in part: concurrent flushes look cheaper
 * than they are.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

static void wait_a_while(void) {
  const char *ms_text = getenv("SLOW_FSYNC_MS");
  long ms = ms_text ? atol(ms_text) : 8;
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

int fsync(int fd) {
  static int (*real)(int);
  if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  wait_a_while();
  return real(fd);
}

int fdatasync(int fd) {
  static int (*real)(int);
  if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
  wait_a_while();
  return real(fd);
}
