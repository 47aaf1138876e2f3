/*
 * vxl_hostcc.c - vortexd-hostcc, the host side's code generator: the last
 * steps of a whole program's host side, which need the host's LLVM target.
 *
 *     vortexd-hostcc --emit=obj|bc INPUT -o -
 *
 * reads the LLVM bitcode vxl_emit_host_bitcode() writes from INPUT (a file
 * or a pipe, /dev/fd/3 when vortexd runs it), gives it its target triple
 * (the module's own, else LLVM's default: the host) and that target's data
 * layout, runs LLVM's O0 pipeline (which lowers the coroutines of
 * async.execute, sizing their frames by that layout) and writes to
 * standard output a position-independent object file (obj) or the bitcode
 * (bc).  Exits 0, or 1 with a message on standard error.
 *
 * A program of its own because the host's target is not in vortexd: the
 * static daemon carries RISC-V's code generator alone.  This one is linked
 * with the shared libLLVM, every target of which is there already; it
 * starts in a few milliseconds for the rare host request (vxc compile
 * --host, vxc run), where the daemon would start ~8 MB of x86 backend.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

/* The most bytes of bitcode read (what vortexd sends is within its frame
 * limit, far below). */
#define HOSTCC_MAX_INPUT (1u << 30)

static int fail(const char *what, const char *detail) {
  fprintf(stderr, "vortexd-hostcc: %s%s%s\n", what, detail && *detail ? ": " : "", detail ? detail : "");
  return 1;
}

/* All of f into *buf (malloc()) / *len, at most HOSTCC_MAX_INPUT bytes.
 * 0 or an errno. */
static int read_all(FILE *f, char **buf, size_t *len) {
  size_t cap = 1u << 16, n = 0;
  char *b = malloc(cap);
  if (!b) return ENOMEM;
  for (;;) {
    if (n == cap) {
      char *nb = cap < HOSTCC_MAX_INPUT ? realloc(b, cap * 2) : NULL;
      if (!nb) {
        free(b);
        return cap < HOSTCC_MAX_INPUT ? ENOMEM : EFBIG;
      }
      b = nb, cap *= 2;
    }
    size_t r = fread(b + n, 1, cap - n, f);
    n += r;
    if (r == 0) break;
  }
  if (ferror(f)) {
    free(b);
    return EIO;
  }
  *buf = b, *len = n;
  return 0;
}

/* The host side's code generation: m given its triple and data layout,
 * run through O0 and written as an object (as_object) or bitcode to
 * standard output.  0, or 1 after a message. */
static int generate(LLVMModuleRef m, int as_object) {
  const char *t = LLVMGetTarget(m);
  char *triple = t && *t ? strdup(t) : LLVMGetDefaultTargetTriple();
  char *msg = NULL;
  LLVMTargetRef target = NULL;
  if (!triple || LLVMGetTargetFromTriple(triple, &target, &msg)) {
    int rc = fail("no LLVM target for the host triple", msg ? msg : triple);
    LLVMDisposeMessage(msg);
    free(triple);
    return rc;
  }
  LLVMSetTarget(m, triple);
  /* position-independent: the object links into executables and libraries */
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, "generic", "", LLVMCodeGenLevelDefault,
                                                    LLVMRelocPIC, LLVMCodeModelDefault);
  free(triple);
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(m, td);
  LLVMDisposeTargetData(td);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef perr = LLVMRunPasses(m, "default<O0>", tm, po);
  LLVMDisposePassBuilderOptions(po);
  int rc = 0;
  LLVMMemoryBufferRef mb = NULL;
  if (perr) {
    char *pm = LLVMGetErrorMessage(perr);
    rc = fail("LLVM's O0 pipeline failed", pm);
    LLVMDisposeErrorMessage(pm);
  } else if (!as_object) {
    mb = LLVMWriteBitcodeToMemoryBuffer(m);
  } else if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, LLVMObjectFile, &msg, &mb)) {
    mb = NULL;
  }
  if (!rc && !mb) rc = fail("code generation failed", msg);
  if (mb) {
    size_t n = LLVMGetBufferSize(mb);
    if (fwrite(LLVMGetBufferStart(mb), 1, n, stdout) != n || fflush(stdout) != 0)
      rc = fail("cannot write the output", strerror(errno));
    LLVMDisposeMemoryBuffer(mb);
  }
  LLVMDisposeMessage(msg);
  LLVMDisposeTargetMachine(tm);
  return rc;
}

/* LLVM's diagnostics: errors written to standard error as failures are
 * (ud: how many so far, an int *), where LLVM's default handler would
 * exit at the first. */
static void on_diagnostic(LLVMDiagnosticInfoRef di, void *ud) {
  if (LLVMGetDiagInfoSeverity(di) != LLVMDSError) return;
  char *text = LLVMGetDiagInfoDescription(di);
  fail(text ? text : "an error without a description", NULL);
  LLVMDisposeMessage(text);
  ++*(int *)ud;
}

int main(int argc, char **argv) {
  int as_object = argc == 5 && strcmp(argv[1], "--emit=obj") == 0;
  if (argc != 5 || (!as_object && strcmp(argv[1], "--emit=bc") != 0) || strcmp(argv[3], "-o") != 0 ||
      strcmp(argv[4], "-") != 0) {
    fprintf(stderr, "usage: vortexd-hostcc --emit=obj|bc INPUT -o -\n");
    return 2;
  }
  FILE *in = fopen(argv[2], "rb");
  if (!in) return fail(argv[2], strerror(errno));
  char *bc = NULL;
  size_t len = 0;
  int e = read_all(in, &bc, &len);
  fclose(in);
  if (e) return fail(argv[2], strerror(e));
  LLVMInitializeNativeTarget();
  LLVMInitializeNativeAsmPrinter();
  LLVMContextRef ctx = LLVMContextCreate();
  int errors = 0;
  LLVMContextSetDiagnosticHandler(ctx, on_diagnostic, &errors);
  LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRange(bc, len, "host.bc", 0);
  LLVMModuleRef m = NULL;
  int rc =
      LLVMParseBitcodeInContext2(ctx, mb, &m) ? fail(argv[2], "not LLVM bitcode") : generate(m, as_object);
  if (errors) rc = 1; /* whatever the step that reported them returned */
  if (m) LLVMDisposeModule(m);
  LLVMDisposeMemoryBuffer(mb);
  LLVMContextDispose(ctx);
  free(bc);
  return rc;
}
