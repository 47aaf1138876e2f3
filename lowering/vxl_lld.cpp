// vxl_lld.cpp - a module's pieces linked by lld's ELF driver in a fork of
// the calling process (vxl_lld.h).
//
// C++ because lld has no C API: lld::elf::link is its driver's entry.
// The link runs in a child forked for it: lld writes its output to
// standard output (-o -, as `ld.lld -r` did), keeps state between links
// that only an exit clears after an error, and is not for a process
// whose other threads may hold LLVM's locks; the child has only the
// calling thread, and its exit takes lld's state with it.  The inputs
// are memory files the child makes from the parent's buffers (copied on
// write by fork) at descriptors 3, 4, ..., named /dev/fd/3, ... as
// ld.lld's were, so the arguments, and the bytes, are ld.lld's.  What a
// program linked with LLVM's static archives needs besides is in
// vxl_lld_static.cpp.

#include "vxl_lld.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "lld/Common/Driver.h"
#include "llvm/Support/raw_ostream.h"

LLD_HAS_DRIVER(elf)

namespace {

// Writes n bytes of p to fd; false on an error.
bool writeAll(int fd, const uint8_t *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w, n -= (size_t)w;
  }
  return true;
}

// The child of parent: inputs at 3 .. 3 + n - 1, output and diagnostics
// on memory files out and diag (made standard output and error), lld run,
// exit status 0 on success.  Never returns.
[[noreturn]] void child(pid_t parent, uint32_t n, const uint8_t *const *objects, const size_t *sizes, int out,
                        int diag) {
  // a worker killed meanwhile (its job's timeout) takes its link with it
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(3);
  if (dup2(out, 1) < 0 || dup2(diag, 2) < 0) _exit(3);
  std::vector<std::string> names;
  for (uint32_t i = 0; i < n; i++) {
    int fd = memfd_create("vxl-piece", 0);
    if (fd < 0 || !writeAll(fd, objects[i], sizes[i])) _exit(3);
    int at = 3 + (int)i;
    // an input's descriptor may sit where a later one goes: moved up first
    if (fd != at && (dup2(fd, at) < 0 || close(fd) != 0)) _exit(3);
    names.push_back("/dev/fd/" + std::to_string(at));
  }
  std::vector<const char *> args = {"ld.lld", "-r", "--no-warnings"};
  for (const std::string &s : names)
    args.push_back(s.c_str());
  args.push_back("-o");
  args.push_back("-");
  bool ok = lld::elf::link(args, llvm::outs(), llvm::errs(), /*exitEarly=*/false, /*disableOutput=*/false);
  llvm::outs().flush();
  llvm::errs().flush();
  _exit(ok && !llvm::outs().has_error() ? 0 : 1);
}

// The contents of memory file fd, at most max bytes, into *out (malloc()).
int readAll(int fd, size_t max, uint8_t **out, size_t *size) {
  struct stat st;
  if (fstat(fd, &st) != 0) return -errno;
  if ((uint64_t)st.st_size > max) return -EFBIG;
  *size = (size_t)st.st_size;
  *out = (uint8_t *)malloc(*size ? *size : 1);
  if (!*out) return -ENOMEM;
  size_t got = 0;
  while (got < *size) {
    ssize_t r = pread(fd, *out + got, *size - got, (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      free(*out);
      *out = nullptr;
      return r < 0 ? -errno : -EIO;
    }
    got += (size_t)r;
  }
  return 0;
}

} // namespace

extern "C" int vxl_lld_link_relocatable(uint32_t n, const uint8_t *const *objects, const size_t *sizes,
                                        uint8_t **out, size_t *out_size, char *err, size_t errcap) {
  *out = nullptr;
  *out_size = 0;
  if (n == 0 || n > VXL_LLD_MAX_INPUTS) {
    snprintf(err, errcap, "%u objects to link (1 to %u)", n, VXL_LLD_MAX_INPUTS);
    return -EINVAL;
  }
  int o = memfd_create("vxl-link-out", MFD_CLOEXEC), d = memfd_create("vxl-link-diag", MFD_CLOEXEC);
  if (o < 0 || d < 0) {
    int e = errno;
    if (o >= 0) close(o);
    if (d >= 0) close(d);
    snprintf(err, errcap, "cannot link: %s", strerror(e));
    return -e;
  }
  fflush(nullptr); // nothing buffered here is written twice
  pid_t self = getpid(), pid = fork();
  if (pid == 0) child(self, n, objects, sizes, o, d);
  int rc = 0, st = 0;
  if (pid < 0) {
    rc = -errno;
    snprintf(err, errcap, "cannot link: fork: %s", strerror(-rc));
  } else {
    while (waitpid(pid, &st, 0) < 0)
      if (errno != EINTR) {
        rc = -errno;
        break;
      }
  }
  if (rc == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
    rc = readAll(o, VXL_LLD_MAX_OUTPUT, out, out_size);
    if (rc == 0 && *out_size == 0) rc = -EIO, free(*out), *out = nullptr;
    if (rc) snprintf(err, errcap, "lld's output: %s", rc == -EIO ? "empty" : strerror(-rc));
  } else if (rc == 0) {
    char text[VXL_LLD_DIAG_MAX + 1];
    ssize_t k = pread(d, text, VXL_LLD_DIAG_MAX, 0);
    text[k > 0 ? k : 0] = '\0';
    for (ssize_t i = k > 0 ? k - 1 : -1; i >= 0 && text[i] == '\n'; i--)
      text[i] = '\0';
    snprintf(err, errcap, "lld failed (%s %d)%s%s", WIFSIGNALED(st) ? "signal" : "exit status",
             WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), text[0] ? ":\n" : "", text);
    rc = -EIO;
  }
  close(o);
  close(d);
  return rc;
}
