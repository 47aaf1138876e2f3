#!/usr/bin/env python3
"""Checks the layering docs/architecture.md states, from what the compiler
and the linker saw, not from a reading of the sources:

  1. what each module's objects include (the compiler's dependency output,
     every .o.d file of the build, transitive): a module sees the libraries
     and the modules of its row of the table in docs/architecture.md, and
     no other's (lowering/ alone MLIR and LLVM, cache/ alone SQLite and
     hiredis, daemon/ alone libuv and libsystemd, protocol/ alone msgpack);
  2. how a header of another module is named: by its path from the
     repository root ("protocol/vxp.h"), except between the installed
     public headers, which are installed side by side;
  3. which daemon file calls which (nm of the daemon's objects): each file
     calls only files below it in daemon/vxd_loop.h's list;
  4. the lowering's driver (lowering/vxl.c) is called, never calls back:
     no other lowering object uses a symbol vxl.c defines;
  5. no function of a module (C or C++; not tests/ or bench/) is over
     MAX_FUNCTION_LINES lines, from universal-ctags' start and end lines;
  6. a vortexd linked with LLVM's static archives holds the code of no
     LLVM target but RISC-V's (Vortex; the host side's code generation is
     vortexd-hostcc's): every other LLVMInitialize<Target>Target nm finds
     is one of lld's stand-ins (lowering/vxl_lld_static.cpp), a function
     of a few bytes, never a target's initializer.
  7. a vortexd linked by lld with LLVM's static archives lays out the
     functions daemon/vortexd.order lists (those a start and a compile run)
     together at the start of its .text, not among the other ~150 000.

    python3 tests/layering.py SOURCE_DIR BUILD_DIR

Prints each violation and exits 1 when there is one.
"""
import glob
import os
import re
import subprocess
import sys

root, build = (os.path.realpath(p) for p in sys.argv[1:3])
problems = []

# ---- 1. what each module may see ----
MODULES = ["protocol", "cache", "lowering", "client", "daemon", "runtime/mgpu", "runtime/simt"]
# the project modules each may include (its own always)
MAY_INCLUDE = {
    "protocol": set(),
    "cache": {"protocol"},
    "lowering": set(),
    "client": {"protocol"},
    "daemon": {"protocol", "cache", "lowering", "runtime/mgpu"},
    "runtime/simt": set(),
    "runtime/mgpu": {"protocol", "client", "cache", "runtime/simt"},
}
# files that are another module's client, built into a library of their
# own: the MLIR plugin asks vortexd for its objects through libvxc
CLIENT_FILES = {"lowering/vxl_plugin.cpp": {"client", "protocol"}}
# libraries only one module may see, by where their headers are
LIBRARIES = [
    ("MLIR/LLVM", re.compile(r"^/usr/lib/llvm-\d+/include/(mlir|llvm|mlir-c|llvm-c)/"), {"lowering"}),
    ("SQLite", re.compile(r"^/usr/include/sqlite3\.h$"), {"cache"}),
    ("hiredis", re.compile(r"^/usr/include/hiredis/"), {"cache"}),
    ("libuv", re.compile(r"^/usr/include/uv(\.h|/)"), {"daemon"}),
    ("libsystemd", re.compile(r"^/usr/include/systemd/"), {"daemon"}),
    ("msgpack-c", re.compile(r"^/usr/include/msgpack(\.h|/)"), {"protocol"}),
]
TOPS = {m.split("/")[0] for m in MODULES}


def module_of(path):
    rel = os.path.relpath(os.path.realpath(path), root)
    for m in sorted(MODULES, key=len, reverse=True):
        if rel.startswith(m + "/"):
            return m
    return None


def deps_of(dfile):
    text = open(dfile).read().replace("\\\n", " ")
    _, _, rest = text.partition(":")
    return rest.split()


for dfile in glob.glob(os.path.join(build, "**", "*.o.d"), recursive=True):
    files = deps_of(dfile)
    if not files:
        continue
    source = files[0]
    mod = module_of(source)
    if mod is None:
        continue  # tests, benchmarks, fuzzers: they may see anything
    for h in files[1:]:
        real = os.path.realpath(h)
        hmod = module_of(real)
        allowed = MAY_INCLUDE[mod] | CLIENT_FILES.get(os.path.relpath(os.path.realpath(source), root), set())
        if hmod is not None and hmod != mod and hmod not in allowed:
            problems.append(f"{os.path.relpath(source, root)} ({mod}/) sees {os.path.relpath(real, root)} ({hmod}/)")
        for name, pattern, allowed in LIBRARIES:
            if pattern.search(real) and mod not in allowed:
                problems.append(f"{os.path.relpath(source, root)} ({mod}/) sees {name}: {real}")
                break

# ---- 2. how another module's header is named ----
PUBLIC = {"client/vxc.h", "protocol/vxp.h", "protocol/vxp_paths.h", "runtime/mgpu/vortexd_runtime.h"}
headers = {}
for m in MODULES:
    for h in glob.glob(os.path.join(root, m, "*.h")):
        headers.setdefault(os.path.basename(h), m)
for m in MODULES:
    for f in glob.glob(os.path.join(root, m, "*.[ch]")) + glob.glob(os.path.join(root, m, "*.cpp")):
        rel = os.path.relpath(f, root)
        for n, line in enumerate(open(f), 1):
            inc = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not inc:
                continue
            name = inc.group(1)
            if "/" in name:  # a project path must be one; "mlir/IR/Builders.h" is a library's
                if name.split("/")[0] in TOPS and not os.path.exists(os.path.join(root, name)):
                    problems.append(f"{rel}:{n}: includes \"{name}\", which is not a path from the root")
                continue
            owner = headers.get(name)
            if owner is None or owner == m:
                continue  # its own module's, or generated (vxc_version.h)
            if rel in PUBLIC and f"{owner}/{name}" in PUBLIC:
                continue  # installed side by side
            problems.append(f"{rel}:{n}: includes \"{name}\" of {owner}/ by its bare name: write \"{owner}/{name}\"")


# ---- 3 and 4: calls, from the objects ----
def symbols(obj):
    out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            used.add(name)
        elif kind.isupper():
            defined.add(name)
    return defined, used


loop_h = open(os.path.join(root, "daemon", "vxd_loop.h")).read()
order = []
for m in re.finditer(r"^ \*   (vxd_\w+\.c)(, (vxd_\w+\.c))?", loop_h, re.M):
    order.append([m.group(1)] + ([m.group(3)] if m.group(3) else []))
rank = {f: i for i, group in enumerate(order) for f in group}
objdir = os.path.join(build, "daemon", "CMakeFiles", "vortexd.dir")
if not order:
    problems.append("daemon/vxd_loop.h: no list of the loop's files found")
elif os.path.isdir(objdir):
    defs, uses = {}, {}
    for f in rank:
        obj = os.path.join(objdir, f + ".o")
        if not os.path.exists(obj):
            problems.append(f"daemon/{f}: listed in vxd_loop.h, no object {obj}")
            continue
        defs[f], uses[f] = symbols(obj)
    for f in defs:
        for g in defs:
            if f != g and uses[f] & defs[g] and rank[g] <= rank[f]:
                names = ", ".join(sorted(uses[f] & defs[g])[:4])
                problems.append(f"daemon/{f} calls daemon/{g} ({names}), which is not below it in vxd_loop.h's list")

lowdir = os.path.join(build, "lowering", "CMakeFiles", "vxl.dir")
driver = os.path.join(lowdir, "vxl.c.o")
if os.path.exists(driver):
    ddefs, _ = symbols(driver)
    for obj in glob.glob(os.path.join(lowdir, "*.o")):
        if obj == driver:
            continue
        _, used = symbols(obj)
        back = used & ddefs
        if back:
            problems.append(f"lowering/{os.path.basename(obj)[:-2]} calls back into the driver lowering/vxl.c: "
                            + ", ".join(sorted(back)))
else:
    problems.append(f"no object {driver}: build first")

# ---- 5. function length ----
MAX_FUNCTION_LINES = 100
sources = sorted(f for m in MODULES for f in glob.glob(os.path.join(root, m, "*.c"))
                 + glob.glob(os.path.join(root, m, "*.cpp")))
try:
    tags = subprocess.run(["ctags", "--fields=+ne", "--kinds-C=f", "--kinds-C++=f", "-o", "-"] + sources,
                          capture_output=True, text=True, check=True).stdout
except (OSError, subprocess.CalledProcessError) as e:
    tags = ""
    problems.append(f"universal-ctags did not run ({e}): function lengths unchecked")
nfunctions = 0
for line in tags.splitlines():
    cols = line.split("\t")
    fields = dict(c.split(":", 1) for c in cols[3:] if ":" in c)
    if "line" in fields and "end" in fields:
        nfunctions += 1
        n = int(fields["end"]) - int(fields["line"]) + 1
        if n > MAX_FUNCTION_LINES:
            problems.append(f"{os.path.relpath(cols[1], root)}:{fields['line']}: {cols[0]} is {n} lines "
                            f"(at most {MAX_FUNCTION_LINES})")
if tags and nfunctions < 100:
    problems.append(f"ctags found only {nfunctions} functions: its output is not what this check reads")

# ---- 6. the LLVM targets in the daemon ----
ALLOWED_TARGETS = {"RISCV"}
STUB_MAX_BYTES = 16  # an empty function, as lowering/vxl_lld_static.cpp defines them
daemon = os.path.join(build, "vortexd")
cache = os.path.join(build, "CMakeCache.txt")
static = os.path.exists(cache) and "VORTEXD_STATIC_LLVM:BOOL=ON" in open(cache).read()
targets = set()
if static and os.path.exists(daemon):
    out = subprocess.run(["nm", "-S", daemon], capture_output=True, text=True).stdout
    sizes = {m.group(2): int(m.group(1), 16)
             for m in re.finditer(r"^\w+ (\w+) T LLVMInitialize(\w+?)Target$", out, re.M)}
    targets = {t for t in sizes if sizes[t] > STUB_MAX_BYTES}
    if "RISCV" not in targets:
        problems.append(f"vortexd has no RISC-V target (nm found {sorted(targets)})")
    for t in sorted(targets - ALLOWED_TARGETS):
        problems.append(f"vortexd links LLVM's {t} target ({sizes[t]} bytes of initializer), which nothing in it "
                        "uses (a register-everything call of MLIR or LLVM brought it in, or lld's stand-in for it "
                        "is missing from lowering/vxl_lld_static.cpp)")
elif static:
    problems.append(f"no {daemon}: build first")

# ---- 7. the functions a start and a compile run, together ----
ORDER_SLACK = 1.25  # alignment padding between functions, and a few left out
cache_text = open(cache).read() if os.path.exists(cache) else ""
ordered = None
if static and "VORTEXD_HAVE_LLD:INTERNAL=1" in cache_text and os.path.exists(daemon):
    listed = [l.strip() for l in open(os.path.join(root, "daemon", "vortexd.order"))
              if l.strip() and not l.startswith("#")]
    sections = subprocess.run(["readelf", "-SW", daemon], capture_output=True, text=True).stdout
    m = re.search(r"\] \.text\s+PROGBITS\s+(\w+) \w+ (\w+)", sections)
    text_lo, text_hi = int(m.group(1), 16), int(m.group(1), 16) + int(m.group(2), 16)
    at = {}
    for line in subprocess.run(["nm", "-S", "--defined-only", daemon], capture_output=True, text=True).stdout.split("\n"):
        f = line.split()
        if len(f) == 4 and f[2] in "tTwW":
            at[f[3]] = (int(f[0], 16), int(f[1], 16))
    in_text = [at[n] for n in listed if n in at and text_lo <= at[n][0] < text_hi]
    need = sum(size for _, size in in_text)
    within = sum(1 for addr, _ in in_text if addr - text_lo < need * ORDER_SLACK)
    ordered = (within, len(in_text), need)
    if len(in_text) < len(listed) // 2:
        problems.append(f"vortexd has only {len(in_text)} of the {len(listed)} functions daemon/vortexd.order lists "
                        "in its .text: run daemon/order.sh again (LLVM or the lowering changed)")
    elif within < 0.95 * len(in_text):
        problems.append(f"only {within} of the {len(in_text)} functions daemon/vortexd.order lists lie in the first "
                        f"{need * ORDER_SLACK / 1e6:.1f} MB of vortexd's .text: the link did not apply the order "
                        "(--symbol-ordering-file, daemon/CMakeLists.txt)")

for p in sorted(set(problems)):
    print("layering:", p, file=sys.stderr)
if problems:
    sys.exit(1)
print(f"layering: {len(MODULES)} modules, {len(rank)} loop files and the lowering's driver keep their layers; "
      f"{nfunctions} functions of at most {MAX_FUNCTION_LINES} lines; "
      f"vortexd's LLVM targets: {', '.join(sorted(targets)) or 'not checked (shared LLVM)'}; "
      + (f"{ordered[0]} of {ordered[1]} ordered functions in .text's first {ordered[2] * ORDER_SLACK / 1e6:.1f} MB"
         if ordered else "function order not checked (no lld)"))
