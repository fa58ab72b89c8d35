/*
 * Preloaded into a PostgreSQL server by `BENCH_PG_FLUSH_MS` (benchmarks/src/slow-flush.ts):
 * every fdatasync and fsync waits AGENT_STATE_FLUSH_DELAY_US microseconds first, then
 * flushes. It stands for a disk whose flush takes that long (a networked volume), so the
 * benchmark can show what commits grouped by concurrent sessions save when a flush is dear.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <time.h>

static void delay(void) {
  const char *value = getenv("AGENT_STATE_FLUSH_DELAY_US");
  long us = value == NULL ? 0 : strtol(value, NULL, 10);
  if (us <= 0) return;
  int saved = errno;
  struct timespec wait = {us / 1000000, (us % 1000000) * 1000L};
  while (nanosleep(&wait, &wait) != 0 && errno == EINTR) {
  }
  errno = saved;
}

int fdatasync(int fd) {
  static int (*real)(int);
  if (real == NULL) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
  delay();
  return real(fd);
}

int fsync(int fd) {
  static int (*real)(int);
  if (real == NULL) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  delay();
  return real(fd);
}
