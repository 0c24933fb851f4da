# SPDX-License-Identifier: BSD-2-Clause
# Mercury: one Makefile for the BPF objects, mercuryd, the client library and the tests.

# `make deps <goals>` (the README's commands): install the packages first, then build the
# other goals in a fresh make that reads pkg-config and the toolchain with them present.
# Under -j nothing may start before deps is done, so this file then only dispatches.
DEPS_AND_MORE := $(and $(filter deps,$(MAKECMDGOALS)),$(filter-out deps,$(MAKECMDGOALS)))
ifneq ($(DEPS_AND_MORE),)
AFTER_DEPS := $(filter-out deps,$(MAKECMDGOALS))
.PHONY: deps deps-then-goals $(AFTER_DEPS)
deps $(AFTER_DEPS): deps-then-goals
	@:
deps-then-goals:
	scripts/deps.sh
	$(MAKE) $(AFTER_DEPS)
else

BUILD    ?= build
# The BPF target arch and its vmlinux.h follow the build machine (override: make ARCH=arm64).
MACHINE  := $(shell uname -m)
ARCH     ?= $(or $(if $(filter x86_64 i%86,$(MACHINE)),x86),$(if $(filter aarch64 arm64,$(MACHINE)),arm64),$(MACHINE))
ifeq ($(wildcard vmlinux/$(ARCH)/vmlinux.h)$(filter vmlinux deps clean,$(MAKECMDGOALS)),)
$(error no vmlinux/$(ARCH)/vmlinux.h for this machine ($(MACHINE)): generate it with `make vmlinux` (needs bpftool and /sys/kernel/btf/vmlinux) or set ARCH)
endif
CC       ?= gcc
CLANG    ?= clang
BPFTOOL  ?= bpftool
PKGS     := libbpf libnl-route-3.0 json-c libsystemd

# daemon/: cli/ (the verbs), service/ (serve: events, tags, job state, metrics), loader/ (BPF
# objects, pins, the attach transaction, the fast path), tc/ (qdiscs, the hook, saved trees),
# each calling only the ones after it. A header of another folder is included by its folder
# ("tc/qdisc.h"), one of the same folder plainly; tests/system/test_module_graph.sh checks
# that no include runs up that order.
DAEMON_INC  := -Idaemon
WARN     := -Wall -Wextra -Werror
CFLAGS   ?= -O2 -g
# Error messages are snprintf-ed into fixed buffers on purpose: truncation is acceptable there.
SANITIZE ?=
override CFLAGS += $(SANITIZE) -std=c11 -D_GNU_SOURCE $(WARN) -Wno-format-truncation -Iinclude -Icommon $(DAEMON_INC) -I$(BUILD) \
            $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# Header dependencies from the compiler, the generated skeletons included: a changed
# bpf/classify.h must rebuild every object that embeds the classifier.
override CFLAGS += -MMD -MP
# Evaluated on first use, not when the Makefile is read: on a fresh machine the packages
# arrive during the run. An unset pkg-config answer is an error, not a link failure later.
LDLIBS    = $(eval LDLIBS := $(call pkg_libs))$(LDLIBS)
pkg_libs  = $(or $(shell pkg-config --libs $(PKGS) 2>/dev/null),$(error pkg-config knows none of $(PKGS): run `make deps`)) -lelf -lz
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) $(WARN) -Ivmlinux/$(ARCH) -Iinclude -Icommon -Ibpf

BPF_SRCS   := $(wildcard bpf/*.bpf.c)
BPF_OBJS   := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/%.bpf.o)
SKELS      := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/%.skel.h)

DAEMON_SRCS := $(filter-out daemon/cli/main.c,$(wildcard daemon/*/*.c))
# common/: what daemon/ and ps/ share (stream position, rate parsing), linked into both.
COMMON_SRCS := $(wildcard common/*.c)
COMMON_OBJS := $(COMMON_SRCS:%.c=$(BUILD)/%.o)
DAEMON_OBJS := $(DAEMON_SRCS:%.c=$(BUILD)/%.o) $(COMMON_OBJS)
UNIT_SRCS   := $(wildcard tests/unit/test_*.c)
UNIT_BINS   := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
KTEST_SRCS  := $(wildcard tests/kernel/test_*.c)
KTEST_BINS  := $(KTEST_SRCS:tests/kernel/%.c=$(BUILD)/tests/%)
LIB_SRCS    := $(wildcard lib/*.c)
LIB_OBJS    := $(LIB_SRCS:%.c=$(BUILD)/%.pic.o)
PS_SRCS     := $(wildcard ps/*.c)
PS_OBJS     := $(PS_SRCS:%.c=$(BUILD)/%.o)
EXAMPLE_SRCS := $(wildcard examples/*.c)
EXAMPLE_BINS := $(EXAMPLE_SRCS:examples/%.c=$(BUILD)/examples/%)
BENCH_SRCS  := $(wildcard bench/*.c)
BENCH_BINS  := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)

# BPF objects are wanted in their own right (tests, the VM image), not just as skeleton inputs;
# skeletons are kept so that the dependency files can name them.
.SECONDARY: $(BPF_OBJS) $(SKELS)

.PHONY: all deps soak test test-unit test-kernel test-integration test-vm test-systemd test-fresh test-asan fuzz bench demo format check-format clean vmlinux
LIBS_OUT := $(if $(LIB_SRCS),$(BUILD)/libmercury.so $(BUILD)/libmercury.a)
PS_OUT   := $(if $(wildcard ps/cli/main.c),$(BUILD)/mercury-ps $(BUILD)/libmercury-ps.so $(BUILD)/libmercury-ps.a)
all: $(BUILD)/mercuryd $(BPF_OBJS) $(LIBS_OUT) $(PS_OUT) $(UNIT_BINS) $(KTEST_BINS) $(BENCH_BINS) $(EXAMPLE_BINS)

deps:
	scripts/deps.sh

vmlinux:
	scripts/gen-vmlinux.sh $(ARCH)

$(BUILD)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h common/*.h) include/mercury_abi.h include/mercury_groups.h | $(BUILD)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# The test variant includes the production program and swaps only its socket view.
$(BUILD)/classifier_test.bpf.o: bpf/classifier.bpf.c

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(BUILD)/daemon/%.o: daemon/%.c $(wildcard daemon/*/*.h include/*.h common/*.h) | $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/common/%.o: common/%.c $(wildcard common/*.h include/*.h)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libmercuryd.a: $(DAEMON_OBJS)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/mercuryd: $(BUILD)/daemon/cli/main.o $(BUILD)/libmercuryd.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libmercuryd.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(filter %.o,$^) $(BUILD)/libmercuryd.a $(LDLIBS) -lcmocka

$(BUILD)/tests/%: tests/kernel/%.c $(BUILD)/libmercuryd.a $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libmercuryd.a $(LDLIBS) -lcmocka

$(BUILD)/bench/%: bench/%.c $(BUILD)/libmercuryd.a $(SKELS) $(LIBS_OUT)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libmercuryd.a $(BUILD)/libmercury.a $(LDLIBS) -lm -lpthread

$(BUILD)/lib/%.pic.o: lib/%.c $(wildcard lib/*.h include/*.h common/*.h) | $(BUILD)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

$(BUILD)/libmercury.so: $(LIB_OBJS)
	$(CC) $(CFLAGS) -shared -Wl,-soname,libmercury.so.1 -o $@ $^ -lpthread

$(BUILD)/libmercury.a: $(LIB_OBJS)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/ps/%.o: ps/%.c $(wildcard ps/*.h include/*.h common/*.h) | $(BUILD)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Ips -c $< -o $@

# libmercury-ps: the PS worker library frameworks link (include/mercury_ps.h); it tags
# through libmercury.so, found next to it ($ORIGIN) or in the system's library path.
PS_PIC_OBJS := $(PS_SRCS:%.c=$(BUILD)/%.pic.o) $(COMMON_SRCS:%.c=$(BUILD)/%.pic.o)
$(BUILD)/ps/%.pic.o: ps/%.c $(wildcard ps/*.h include/*.h common/*.h) | $(BUILD)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Ips -fPIC -fvisibility=hidden -c $< -o $@

$(BUILD)/common/%.pic.o: common/%.c $(wildcard common/*.h include/*.h) | $(BUILD)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

$(BUILD)/libmercury-ps.so: $(PS_PIC_OBJS) $(BUILD)/libmercury.so
	$(CC) $(CFLAGS) -shared -Wl,-soname,libmercury-ps.so.1 -Wl,-rpath,'$$ORIGIN' -o $@ \
		$(PS_PIC_OBJS) -L$(BUILD) -lmercury -lpthread -lm

$(BUILD)/libmercury-ps.a: $(PS_OBJS) $(COMMON_OBJS)
	rm -f $@ && ar rcs $@ $^

# The command's own parts (ps/cli/: main, serve, JSON output) stay out of libmercury-ps.
PS_CLI_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard ps/cli/*.c))
$(BUILD)/ps/cli/%.o: ps/cli/%.c $(wildcard ps/*.h ps/cli/*.h include/*.h common/*.h) | $(BUILD)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Ips -c $< -o $@

$(BUILD)/mercury-ps: $(PS_CLI_OBJS) $(PS_OBJS) $(COMMON_OBJS) $(BUILD)/libmercury.a
	$(CC) $(CFLAGS) -o $@ $^ $(or $(shell pkg-config --libs json-c 2>/dev/null),$(error pkg-config knows no json-c: run `make deps`)) -lpthread -lm

$(BUILD)/examples/%: examples/%.c $(BUILD)/libmercury.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libmercury.a -lpthread

$(BUILD):
	mkdir -p $@

test: all
	tests/run.sh all

test-unit: all
	tests/run.sh unit

test-kernel: all
	tests/run.sh kernel

test-vm: all
	tests/vm/run.sh

# mercuryd.service under a real systemd: Debian root + make deb + the 6.1 kernel under QEMU.
test-systemd: all
	tests/vm/systemd-e2e.sh

# The README's two commands on a bare Debian root (mmdebstrap + chroot); see the script.
test-fresh:
	scripts/test-fresh.sh

test-integration: all
	tests/run.sh integration

bench: all
	bench/run.sh

# The long soak (not part of make test; tests/integration/test_soak.sh is the short one):
# 100,000 iterations of the tiny model on the emulated 2-node cluster through mercuryd, a
# sample a minute, the fast path and the service in turn, serve restarts and re-attachments
# meanwhile. Samples, logs and the verdict in build/soak/ (SOAK_ARGS: more bench/soak.sh options).
soak: all
	rm -rf $(BUILD)/soak
	bench/soak.sh --out $(BUILD)/soak $(SOAK_ARGS)

# The README's main command: two flows with Mercury off then on, then the emulated cluster
# (ResNet-50, 4 nodes: fifo vs partition vs mercury vs ideal). About a minute.
demo: all
	scripts/demo-two-flows.sh
	cluster/demo.sh

# libFuzzer over the event decoder (make fuzz FUZZ_RUNS=N; the test run does 1M).
FUZZ_RUNS ?= 10000000
$(BUILD)/fuzz/fuzz_wire: fuzz/fuzz_wire.c daemon/service/wire_decode.c daemon/service/wire_decode.h include/mercury_wire.h
	@mkdir -p $(@D)
	$(CLANG) -g -O1 -std=c11 -D_GNU_SOURCE $(WARN) -fsanitize=fuzzer,address,undefined \
		-Iinclude -Icommon -Idaemon fuzz/fuzz_wire.c daemon/service/wire_decode.c -o $@

fuzz: $(BUILD)/fuzz/fuzz_wire
	mkdir -p $(BUILD)/fuzz/corpus && cp fuzz/corpus/* $(BUILD)/fuzz/corpus/
	$(BUILD)/fuzz/fuzz_wire -runs=$(FUZZ_RUNS) -max_len=1100 $(BUILD)/fuzz/corpus

# The unit tests again, built with AddressSanitizer and UBSan, in their own build tree.
test-asan:
	$(MAKE) BUILD=build-asan CC=gcc CFLAGS="-O1 -g" SANITIZE="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
		$(UNIT_SRCS:tests/unit/%.c=build-asan/tests/%)
	BUILD=$(CURDIR)/build-asan tests/run.sh unit

FORMAT_SRCS = $(shell git ls-files '*.c' '*.h' | grep -v '^vmlinux/')
format:
	clang-format -i $(FORMAT_SRCS)

check-format:
	clang-format --dry-run --Werror $(FORMAT_SRCS)

clean:
	rm -rf $(BUILD) build-asan

# ---- install ----
# make install [PREFIX=/usr/local] [DESTDIR=...]; make uninstall with the same values.
PREFIX     ?= /usr/local
SBINDIR    ?= $(PREFIX)/sbin
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
UNITDIR    ?= $(PREFIX)/lib/systemd/system
COMPDIR    ?= $(PREFIX)/share/bash-completion/completions
DATADIR    ?= $(PREFIX)/share/mercury
# Debian's python3 reads /usr/lib/python3/dist-packages and /usr/local/lib/python3.X/dist-packages.
PYTHONDIR  ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PREFIX)/lib/python$(shell python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)/dist-packages)
VERSION    := $(shell sed -n 's/^\#define MERCURY_VERSION "\(.*\)"/\1/p' common/version.h)
INSTALLED  := $(SBINDIR)/mercuryd $(BINDIR)/mercury-ps $(LIBDIR)/libmercury.so.1 $(LIBDIR)/libmercury.so \
	$(LIBDIR)/libmercury.a $(INCLUDEDIR)/mercury.h $(INCLUDEDIR)/mercury_groups.h \
	$(LIBDIR)/pkgconfig/mercury.pc $(MANDIR)/man8/mercuryd.8 $(MANDIR)/man1/mercury-ps.1 \
	$(UNITDIR)/mercuryd.service $(COMPDIR)/mercuryd $(COMPDIR)/mercury-ps $(PYTHONDIR)/mercury/__init__.py $(PYTHONDIR)/mercury/ps.py \
	$(PYTHONDIR)/mercury/torch.py $(LIBDIR)/libmercury-ps.so.1 $(LIBDIR)/libmercury-ps.so \
	$(LIBDIR)/libmercury-ps.a $(INCLUDEDIR)/mercury_ps.h $(DATADIR)/node-exporter.conf

.PHONY: install uninstall deb
# Debian packages of `make install PREFIX=/usr` (dpkg-deb, scripts/make-deb.sh): mercury,
# libmercury-dev and python3-mercury in build/
deb: $(BUILD)/mercuryd $(BUILD)/mercury-ps $(BUILD)/libmercury.so $(BUILD)/libmercury.a
	scripts/make-deb.sh

install: $(BUILD)/mercuryd $(BUILD)/mercury-ps $(BUILD)/libmercury.so $(BUILD)/libmercury.a \
	 $(BUILD)/libmercury-ps.so $(BUILD)/libmercury-ps.a
	install -D -m 0755 $(BUILD)/mercuryd $(DESTDIR)$(SBINDIR)/mercuryd
	install -D -m 0755 $(BUILD)/mercury-ps $(DESTDIR)$(BINDIR)/mercury-ps
	install -D -m 0755 $(BUILD)/libmercury.so $(DESTDIR)$(LIBDIR)/libmercury.so.1
	ln -sf libmercury.so.1 $(DESTDIR)$(LIBDIR)/libmercury.so
	install -D -m 0644 $(BUILD)/libmercury.a $(DESTDIR)$(LIBDIR)/libmercury.a
	install -D -m 0644 include/mercury.h $(DESTDIR)$(INCLUDEDIR)/mercury.h
	install -D -m 0644 include/mercury_groups.h $(DESTDIR)$(INCLUDEDIR)/mercury_groups.h
	mkdir -p $(DESTDIR)$(LIBDIR)/pkgconfig
	sed -e 's#@PREFIX@#$(PREFIX)#' -e 's#@LIBDIR@#$(LIBDIR)#' -e 's#@INCLUDEDIR@#$(INCLUDEDIR)#' \
		-e 's#@VERSION@#$(VERSION)#' scripts/mercury.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/mercury.pc
	install -D -m 0644 man/mercuryd.8 $(DESTDIR)$(MANDIR)/man8/mercuryd.8
	install -D -m 0644 man/mercury-ps.1 $(DESTDIR)$(MANDIR)/man1/mercury-ps.1
	mkdir -p $(DESTDIR)$(UNITDIR)
	sed 's#/usr/local/sbin/mercuryd#$(SBINDIR)/mercuryd#g' systemd/mercuryd.service > $(DESTDIR)$(UNITDIR)/mercuryd.service
	mkdir -p $(DESTDIR)$(DATADIR)
	sed -e 's#/usr/local/sbin/mercuryd#$(SBINDIR)/mercuryd#g' -e 's#/usr/local/share/mercury#$(DATADIR)#g' \
		systemd/mercuryd.service.d/node-exporter.conf > $(DESTDIR)$(DATADIR)/node-exporter.conf
	install -D -m 0644 completion/mercuryd.bash $(DESTDIR)$(COMPDIR)/mercuryd
	install -D -m 0644 completion/mercury-ps.bash $(DESTDIR)$(COMPDIR)/mercury-ps
	install -D -m 0644 python/mercury/__init__.py $(DESTDIR)$(PYTHONDIR)/mercury/__init__.py
	install -D -m 0644 python/mercury/ps.py $(DESTDIR)$(PYTHONDIR)/mercury/ps.py
	install -D -m 0644 python/mercury/torch.py $(DESTDIR)$(PYTHONDIR)/mercury/torch.py
	install -D -m 0755 $(BUILD)/libmercury-ps.so $(DESTDIR)$(LIBDIR)/libmercury-ps.so.1
	ln -sf libmercury-ps.so.1 $(DESTDIR)$(LIBDIR)/libmercury-ps.so
	install -D -m 0644 $(BUILD)/libmercury-ps.a $(DESTDIR)$(LIBDIR)/libmercury-ps.a
	install -D -m 0644 include/mercury_ps.h $(DESTDIR)$(INCLUDEDIR)/mercury_ps.h
	@[ -n "$(DESTDIR)" ] || ldconfig 2>/dev/null || true

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	-rmdir $(DESTDIR)$(PYTHONDIR)/mercury 2>/dev/null

# Reference PS on the emulated cluster (cluster/): the paper's comparison and its short demo.
.PHONY: bench-cluster demo-cluster bench-torch bench-torch-trace bench-torch-compute bench-baseline bench-fabric bench-multijob bench-ecn
# Real training (resnet18 on 2 emulated nodes, 4 rates) against DDP over gloo: ~55 min.
bench-torch: $(BUILD)/mercury-ps $(BUILD)/mercuryd $(BUILD)/libmercury-ps.so
	bench/torch_bench.sh

# Where the link's time goes: one traced resnet18 run per mode at 400 Mbit/s, ~3 min.
bench-torch-trace: $(BUILD)/mercury-ps $(BUILD)/mercuryd $(BUILD)/libmercury-ps.so
	bench/torch_trace.sh mercury ddp fifo

# Trainer compute, fifo against mercury, paired rounds on shared cores and with rank 0's
# main thread pinned alone (issue 34): 5 rounds at 400 Mbit/s, ~12 min.
bench-torch-compute: $(BUILD)/mercury-ps $(BUILD)/mercuryd $(BUILD)/libmercury-ps.so
	bench/torch_compute.sh

bench-cluster: $(BUILD)/mercury-ps $(BUILD)/mercuryd
	cluster/bench.sh

# The full-duplex fabric: fifo, tuned ByteScheduler, mercury with FIFO and with DSCP
# strict-priority switch ports; 4 and 8 nodes, a port-buffer sweep, two racks (~50 min).
bench-fabric: $(BUILD)/mercury-ps $(BUILD)/mercuryd
	cluster/fabric.sh

# The ByteScheduler baseline tuned over its (P, C) grid against untuned Mercury, the per-op
# start-up cost swept and a link whose rate changes: ~80 min (cluster/tune.sh).
bench-baseline: $(BUILD)/mercury-ps $(BUILD)/mercuryd
	cluster/tune.sh --models "resnet50 vgg16" --cases "mxnet bal" --op-costs "0 50 200 1000" \
		--op-cost-model resnet50 --varying resnet50

demo-cluster: $(BUILD)/mercury-ps $(BUILD)/mercuryd
	cluster/demo.sh

# Drop-tail against ECN-marking FIFO switch ports side by side (fifo, tuned ByteScheduler,
# mercury; mercury with autotuned windows on ECN ports): 4 nodes, ResNet-50 and VGG16,
# about 5 min (cluster/ecn.sh; --nodes 8 --scale 50 for the 8-node cells).
bench-ecn: $(BUILD)/mercury-ps $(BUILD)/mercuryd $(BUILD)/bench/port_ecn
	cluster/ecn.sh

# Two PS jobs sharing 4 nodes (ResNet-50 + VGG16, BERT-base + Inception-v3; alone, fifo,
# tuned ByteScheduler, per-job priority, Mercury 1:1 under share and under priority, 2:1 with
# equal windows and with windows 2:1), then beside a bulk transfer: about 50 min
# (cluster/multijob.sh; --repeat 1 about 19). Not
# in CI: tests/integration/test_multijob.sh is its smoke.
bench-multijob: $(BUILD)/mercury-ps $(BUILD)/mercuryd
	cluster/multijob.sh

# The PS unit tests link the PS objects they test; the node test brings its own tagging
# (tag.c's calls into libmercury are stubbed there).
PS_TEST_OBJS := $(filter-out $(BUILD)/ps/tag.o,$(PS_OBJS)) $(COMMON_OBJS)
$(BUILD)/tests/test_ps_aggregation: tests/unit/test_ps_aggregation.c $(PS_TEST_OBJS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Ips -o $@ $< $(PS_TEST_OBJS) -lcmocka -lpthread -lm
$(BUILD)/tests/test_ps_placement: tests/unit/test_ps_placement.c $(BUILD)/ps/placement.o \
		$(BUILD)/ps/ideal.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Ips -o $@ $< $(filter %.o,$^) -lcmocka -lm
# test_ps_api links the worker library as a framework does.
$(BUILD)/tests/test_ps_api: tests/unit/test_ps_api.c $(BUILD)/libmercury-ps.a $(BUILD)/libmercury.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Ips -o $@ $< $(BUILD)/libmercury-ps.a $(BUILD)/libmercury.a -lcmocka -lpthread -lm
# test_client links the client library as a framework does.
$(BUILD)/tests/test_client: tests/unit/test_client.c $(BUILD)/libmercury.a $(BUILD)/libmercuryd.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libmercury.a $(BUILD)/libmercuryd.a $(LDLIBS) -lcmocka

# Compiler-written header dependencies (-MMD), last so that `all` stays the default goal.
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

endif # DEPS_AND_MORE
