/*
 * writelimit: the write limit of the inbound benchmark. It appends the bytes chatlinkd stored
 * in the same run to a fresh file, in writes of the size chatlinkd's disk thread made, with the
 * same sync policy, and nothing else: no sockets, no JSON, no per-line work. What it reaches is
 * what the disk (and the kernel's write path) allow a durable log on this machine; chatlinkd's
 * inbound rate is reported as a share of it.
 *
 *   writelimit INPUT OUTPUT CHUNK batch:MS | always | none
 *
 * INPUT is read whole before the clock starts. Each write takes CHUNK bytes and then runs on to
 * the next newline, as chatlinkd writes whole lines. batch:MS calls fdatasync when MS ms have
 * passed since the last one (checked after each write, as a group commit on the writing thread
 * would); always calls it after every write; a final fdatasync ends every policy. Prints one
 * JSON line: seconds and CPU seconds of the timed part, bytes, lines, writes, syncs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double clock_seconds(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now(void) { return clock_seconds(CLOCK_MONOTONIC); }

static void die(const char *what) {
  fprintf(stderr, "writelimit: %s: %s\n", what, strerror(errno));
  exit(1);
}

static char *read_all(const char *path, size_t *size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) die(path);
  struct stat st;
  if (fstat(fd, &st) != 0) die(path);
  char *data = malloc((size_t)st.st_size + 1);
  if (!data) die("malloc");
  size_t have = 0;
  while (have < (size_t)st.st_size) {
    ssize_t n = read(fd, data + have, (size_t)st.st_size - have);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) die(path);
    have += (size_t)n;
  }
  close(fd);
  *size = have;
  return data;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: writelimit INPUT OUTPUT CHUNK batch:MS|always|none\n");
    return 2;
  }
  size_t size = 0;
  char *data = read_all(argv[1], &size);
  long chunk = strtol(argv[3], NULL, 10);
  if (chunk < 1) chunk = 1;
  int always = strcmp(argv[4], "always") == 0;
  double interval = -1;
  if (strncmp(argv[4], "batch:", 6) == 0) interval = strtod(argv[4] + 6, NULL) / 1000.0;
  else if (!always && strcmp(argv[4], "none") != 0) {
    fprintf(stderr, "writelimit: unknown sync policy '%s'\n", argv[4]);
    return 2;
  }
  int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0640);
  if (fd < 0) die(argv[2]);
  long lines = 0, writes = 0, syncs = 0;
  for (size_t i = 0; i < size; i++) lines += data[i] == '\n';

  double cpu_start = clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
  double start = now(), last_sync = start;
  size_t at = 0;
  while (at < size) {
    size_t end = at + (size_t)chunk < size ? at + (size_t)chunk : size;
    char *newline = memchr(data + end - 1, '\n', size - (end - 1));
    end = newline ? (size_t)(newline - data) + 1 : size;
    size_t off = at;
    while (off < end) {
      ssize_t n = write(fd, data + off, end - off);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) die("write");
      off += (size_t)n;
    }
    writes++;
    at = end;
    double t = now();
    if (always || (interval >= 0 && t - last_sync >= interval)) {
      if (fdatasync(fd) != 0) die("fdatasync");
      syncs++;
      last_sync = now();
    }
  }
  if (fdatasync(fd) != 0) die("fdatasync");
  syncs++;
  double seconds = now() - start;
  double cpu = clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu_start;
  close(fd);
  printf("{\"seconds\":%.6f,\"cpu\":%.6f,\"bytes\":%zu,\"lines\":%ld,\"writes\":%ld,"
         "\"syncs\":%ld}\n",
         seconds, cpu, size, lines, writes, syncs);
  free(data);
  return 0;
}
