# forksafe: VM-fork safety for the Linux RNG and WireGuard, proven in QEMU.
#
# Operators:
#   make demo         the fork matrix, stock and patched kernels (results/)
#                     METHODS="migrate-file ..." VCPUS="1 2" CLONES=4
#   make bench-rng    what the series buys and costs for the RNG
#   make bench-wg     the same for WireGuard
#   make bench-vdso   what the 6.12 vDSO getrandom() check costs, in instructions
#   make bench-openssl what forksafe-openssl costs per RAND_bytes(16), in
#                     instructions (valgrind), CALLS=20000
#   make image-openssl  OpenSSL's DRBGs and a TLS server forked in the image of
#                     make image-kernel, provider on and off (LINUX=6.12, CLONES=2)
#   make cold-clones  boots of one golden image: identical RNG output or not
#                     CLONES=3, COLD_ROWS="det,fresh,none,qemu64,no ..."
#   make storm        chained forks, a clone of a clone ..., DEPTH=100 levels,
#                     METHOD=migrate-file|qcow2-newproc|libvirt-save, WG=1 (a tunnel)
#   make crowd        CLONES=16 clones of one snapshot running at once
#   make wg-scale     a VM with PEERS="1 10 50 200" WireGuard peers, forked
#   make wg-deploy    WireGuard clones after live snapshots (the original ran on
#                     LIVE="0 10 130" s), with clocks BEHIND="1 60 3600" s and
#                     side by side with one key for BOTH="20" s, an hour behind
#                     with SCALE="50" peers, with and without the fork hooks
#                     that step their clocks
#   make check        build everything and run snapshot-tests/ (KTAP)
#                     TESTS="boot_vmgenid ..." a subset
# Developers:
#   make mutants      every mutation of the series must be caught by a test
#   make fuzz         the parsers under libFuzzer, FUZZ_SECONDS=20 each
#   make kernel-tree  the series applied in a git tree to edit; then
#   make refresh-patches   rewrite kernel-patches/ from it (checkpatch: make checkpatch)
#   make kernel kernel-stock kernel-kunit kernel-debug kernel-bench   build (cached)
#   make kernel-deb   the patched kernel as an installable .deb (bindeb-pkg)
#                     LINUX=6.12 for these seven: Debian's linux-source-6.12 (else 6.1)
#   make guest tools  the initramfs, the host tools;  make deps  Debian packages
#   make agent-deb    the guest agent as a Debian package, for an operator's image
#   make openssl-deb  forksafe-openssl, the OpenSSL 3 provider, as a Debian package
#   make debs         every package an operator installs, in build/: forksafe-agent,
#                     forksafe-openssl, forksafe-guest (seed tool, fork hooks and
#                     their units), libforksafe1, libforksafe-dev
#   make image        a Debian 12 image with systemd and the packages of make debs
#                     installed with apt (KERNELS=debian-image)
# Knobs for all: KERNELS="patched stock" (add patched-6.12 stock-6.12 for
#   6.12; built as needed), KERNEL=/path/bzImage (that kernel alone),
#   IMAGE=/path/golden.qcow2 (an operator's image alone, its own kernel), QEMU=,
#   ACCEL=tcg|kvm (skip the KVM probe), KEEP_RUN_DIR=1 (keep guest logs),
#   RESULTS=DIR, V=1 (full kernel build output), FORKSAFE_CACHE=DIR.
# Each driver explains its options: snapshot-tests/drivers/NAME.sh --help.

BUILD ?= $(CURDIR)/build
export FORKSAFE_BUILD := $(BUILD)

WARN := -Wall -Wextra -Werror -std=gnu11
CC ?= cc
GUEST_CFLAGS := -O2 -static $(WARN)
# The host tools read what guests and QEMU send them: always sanitized.
HOST_CFLAGS := -O1 -g $(WARN) -fsanitize=address,undefined -fno-sanitize-recover=all

DEBS := linux-source-6.1 linux-source-6.12 bc bison flex libelf-dev libssl-dev cpio xz-utils file pkg-config groff-base \
	gcc make clang libclang-rt-14-dev \
	qemu-system-x86 qemu-utils vde2 wireguard-tools busybox-static iproute2 \
	libvirt-daemon-system libvirt-clients libvirt-dev \
	libjson-c-dev libpcap-dev jq shellcheck python3-ply python3-git chromium e2fsprogs kmod mmdebstrap fdisk lintian
# What the kernel's bindeb-pkg needs besides (make kernel-deb only).
KERNEL_DEB_DEBS := dpkg-dev fakeroot rsync debhelper

.PHONY: all help deps kernels kernel kernel-stock kernel-kunit kernel-debug kernel-bench kernel-deb image-kernel image-openssl kernel-tree refresh-patches \
	checkpatch guest agent-deb openssl-deb debs image tools corpus check demo bench-rng bench-wg bench-vdso bench-openssl cold-clones storm crowd wg-scale wg-deploy mutants fuzz clean

all: kernel kernel-stock guest tools

# This file's opening comment, which is the list of targets and knobs.
help:
	@sed -n '1,/^$$/s/^# \{0,1\}//p' Makefile

# Idempotent: asks dpkg first and runs apt-get only for what is missing.
deps:
	@missing=""; for p in $(DEBS); do \
		dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "deps: installing$$missing"; \
		rc=$$(mktemp); \
		{ apt-get update -qq && { DEBIAN_FRONTEND=noninteractive \
		  apt-get install -y -q --no-install-recommends -o Dpkg::Use-Pty=0 $$missing; \
		  echo $$? >"$$rc"; } | sed -u -n 's/^Setting up \([^ ]*\).*/deps: set up \1/p' && \
		  [ "$$(cat "$$rc")" = 0 ]; } || \
		{ rm -f "$$rc"; echo "deps: apt-get install failed for$$missing" >&2; exit 1; }; \
		rm -f "$$rc"; \
	fi; \
	getent group libvirt-qemu >/dev/null || groupadd --system libvirt-qemu; \
	getent passwd libvirt-qemu >/dev/null || \
		useradd --system -g libvirt-qemu -M -d /var/lib/libvirt -s /usr/sbin/nologin libvirt-qemu

# ---- kernels (cached by input hash outside the clone) --------------------------
# LINUX=6.12 builds from linux-source-6.12: build/bzImage-patched-6.12, ...
LINUX ?= 6.1
KSUFFIX := $(if $(filter 6.1,$(LINUX)),,-$(LINUX))
kernel:
	@kernel-patches/kernel.sh build patched$(KSUFFIX)
kernel-stock:
	@kernel-patches/kernel.sh build stock$(KSUFFIX)
kernel-kunit:
	@kernel-patches/kernel.sh build kunit$(KSUFFIX)
kernel-debug:
	@kernel-patches/kernel.sh build debug$(KSUFFIX)
kernel-bench:
	@kernel-patches/kernel.sh build stock-bench$(KSUFFIX)
	@kernel-patches/kernel.sh build patched-bench$(KSUFFIX)
# The patched kernel as operators install it: build/debs/linux-image-patched[-6.12].deb.
kernel-deb:
	@$(MAKE) --no-print-directory deps DEBS="$(DEBS) $(KERNEL_DEB_DEBS)"
	@kernel-patches/kernel.sh deb patched$(KSUFFIX)
# The kernels the operators' targets measure: each built (or found cached).
KERNELS ?= patched stock
export KERNELS
# IMAGE= (an operator's image) brings its own kernel: nothing to build.
kernels:
	@[ -z "$$IMAGE" ] || exit 0; for k in $(KERNELS); do \
		if [ "$$k" = debian-image ]; then $(MAKE) --no-print-directory image; \
		else kernel-patches/kernel.sh build "$$k"; fi || exit 1; \
	done
kernel-tree:
	@kernel-patches/kernel.sh tree $(LINUX)
refresh-patches:
	@kernel-patches/kernel.sh refresh $(LINUX)
checkpatch:
	@kernel-patches/kernel.sh checkpatch $(LINUX)

# ---- guest userspace -----------------------------------------------------------
SEED_MUTANTS := $(basename $(notdir $(wildcard guest/mutants/*.patch)))
guest: $(BUILD)/initramfs.cpio $(SEED_MUTANTS:%=$(BUILD)/initramfs-seed-mutant-%.cpio)

$(BUILD)/init: guest/init.c | $(BUILD)
	$(CC) $(GUEST_CFLAGS) -o $@ $^

AGENT_SRC := guest/agent.c guest/genid.c guest/recorder.c guest/bench.c guest/net.c guest/vdso.c \
	guest/fork_signal.c guest/forksafe.c guest/sha256.c
AGENT_H := guest/clock.h guest/genid.h guest/recorder.h guest/bench.h guest/net.h guest/protocol.h \
	guest/vdso.h guest/fork_signal.h guest/forksafe.h guest/sha256.h
$(BUILD)/forksafe-agent: $(AGENT_SRC) $(AGENT_H) | $(BUILD)
	$(CC) $(GUEST_CFLAGS) -pthread -o $@ $(filter %.c,$^)

# The seed tool (guest/seed.c) and the cold-boot sampler (guest/cold.c).
SEED_LIBS := guest/sha256.c guest/genid.c guest/forksafe.c guest/sha256.h guest/genid.h guest/forksafe.h
$(BUILD)/forksafe-seed: guest/seed.c $(SEED_LIBS) | $(BUILD)
	$(CC) $(GUEST_CFLAGS) -o $@ $(filter %.c,$^)

$(BUILD)/forksafe-cold: guest/cold.c | $(BUILD)
	$(CC) $(GUEST_CFLAGS) -o $@ $^

# The fork hooks' daemon (guest/hooks.c).
$(BUILD)/forksafe-hooks: guest/hooks.c guest/forksafe.c guest/sha256.c guest/forksafe.h guest/sha256.h | $(BUILD)
	$(CC) $(GUEST_CFLAGS) -o $@ $(filter %.c,$^)

GUEST_PROGRAMS := $(BUILD)/forksafe-agent $(BUILD)/forksafe-seed $(BUILD)/forksafe-cold $(BUILD)/forksafe-hooks
$(BUILD)/initramfs.cpio: $(BUILD)/init $(GUEST_PROGRAMS) guest/build-initramfs.sh guest/test-hooks guest/fork.d guest/test-identity \
		guest/test-scripts $(wildcard guest/test-hooks/* guest/fork.d/* guest/test-identity/* guest/test-scripts/*)
	guest/build-initramfs.sh $@ $(BUILD)/init $(GUEST_PROGRAMS)

# The seed tool's mutants (guest/mutants/NAME.patch, each a bug the crash
# tests must catch): an initramfs each, the mutant in the tool's place.
$(BUILD)/seed-mutant-%/forksafe-seed: guest/mutants/%.patch guest/seed.c $(SEED_LIBS)
	mkdir -p $(@D)
	cp guest/seed.c $(@D)/seed.c
	patch -s $(@D)/seed.c $<
	$(CC) $(GUEST_CFLAGS) -Iguest -o $@ $(@D)/seed.c $(filter %.c,$(SEED_LIBS))

# Kept (make would delete them as intermediates and rebuild them each time).
.SECONDARY: $(SEED_MUTANTS:%=$(BUILD)/seed-mutant-%/forksafe-seed)
$(BUILD)/initramfs-seed-mutant-%.cpio: $(BUILD)/seed-mutant-%/forksafe-seed $(BUILD)/init $(GUEST_PROGRAMS) guest/build-initramfs.sh
	guest/build-initramfs.sh $@ $(BUILD)/init $(BUILD)/forksafe-agent $< $(BUILD)/forksafe-cold

# ---- a Debian guest image (cached outside the clone) ---------------------------
# The agent as a Debian package (the agent and its systemd unit), and a
# Debian 12 image with systemd that has it installed: KERNELS=debian-image.
AGENT_DEB := $(BUILD)/forksafe-agent.deb
agent-deb: $(AGENT_DEB)
$(AGENT_DEB): $(BUILD)/forksafe-agent guest/build-deb.sh $(wildcard guest/deb/*)
	guest/build-deb.sh agent $@ $<
OPENSSL_DEB := $(BUILD)/forksafe-openssl.deb
openssl-deb: $(OPENSSL_DEB)
$(OPENSSL_DEB): $(BUILD)/forksafe-openssl.so guest/build-deb.sh guest/deb/openssl.cnf
	guest/build-deb.sh openssl $@ $<
# libforksafe as a library: only forksafe_* exported (guest/deb/libforksafe.map),
# the build directory kept out of the objects, so that packages repeat byte
# for byte.
LIB_SRC := guest/forksafe.c guest/sha256.c
LIB_CFLAGS := -O2 -fPIC $(WARN) -ffile-prefix-map=$(CURDIR)=.
LIB_OBJS := $(LIB_SRC:guest/%.c=$(BUILD)/lib/%.o)
$(BUILD)/lib/%.o: guest/%.c guest/forksafe.h guest/sha256.h | $(BUILD)
	@mkdir -p $(@D)
	$(CC) $(LIB_CFLAGS) -c -o $@ $<
$(BUILD)/lib/libforksafe.so.1: $(LIB_OBJS) guest/deb/libforksafe.map
	$(CC) -shared -Wl,-soname,libforksafe.so.1 -Wl,--version-script=guest/deb/libforksafe.map -o $@ $(LIB_OBJS)
$(BUILD)/lib/libforksafe.a: $(LIB_OBJS)
	rm -f $@
	ar rcsD $@ $^
GUEST_DEB := $(BUILD)/forksafe-guest.deb
LIB_DEB := $(BUILD)/libforksafe1.deb
DEV_DEB := $(BUILD)/libforksafe-dev.deb
$(GUEST_DEB): $(BUILD)/forksafe-seed $(BUILD)/forksafe-hooks guest/build-deb.sh guest/fork.d $(wildcard guest/fork.d/* guest/deb/*)
	guest/build-deb.sh guest $@ $(BUILD)
$(LIB_DEB) $(DEV_DEB): $(BUILD)/lib/libforksafe.so.1 $(BUILD)/lib/libforksafe.a guest/forksafe.h guest/build-deb.sh $(wildcard guest/deb/*)
	guest/build-deb.sh $(if $(filter $(LIB_DEB),$@),lib,dev) $@ $(BUILD)/lib
debs: $(AGENT_DEB) $(OPENSSL_DEB) $(GUEST_DEB) $(LIB_DEB) $(DEV_DEB)

# What the image installs (guest/build-image.sh takes them from $(BUILD)).
IMAGE_DEBS := $(AGENT_DEB) $(GUEST_DEB) $(LIB_DEB) $(OPENSSL_DEB)
image: deps $(IMAGE_DEBS)
	@guest/build-image.sh $(BUILD)/image $(BUILD)

# The image with the packaged patched kernel installed (make kernel-deb), as
# an operator would upgrade a golden image: boot it with
# IMAGE=$(BUILD)/image-kernel/disk.qcow2 (LINUX=6.12: image-kernel-6.12).
image-kernel: deps $(IMAGE_DEBS)
	@$(MAKE) --no-print-directory kernel-deb
	@guest/build-image.sh $(BUILD)/image-kernel$(KSUFFIX) $(BUILD) $(BUILD)/debs/linux-image-patched$(KSUFFIX).deb

# OpenSSL's DRBG rows and the TLS server in that image, provider on and off.
image-openssl: image-kernel
	@$(MAKE) --no-print-directory guest tools
	@IMAGE=$(BUILD)/image-kernel$(KSUFFIX)/disk.qcow2 snapshot-tests/drivers/image-openssl.sh \
		--clones "$(if $(filter command line environment,$(origin CLONES)),$(CLONES),2)"

# ---- host tools ----------------------------------------------------------------
# They include guest/protocol.h, what the agent and the host share.
AN := snapshot-tests/analyzers
TOOLS := $(BUILD)/qmp $(BUILD)/agent-call $(BUILD)/rng-exposure $(BUILD)/fork-report \
	$(BUILD)/wg-detect $(BUILD)/pcap-synth $(BUILD)/forksafe-seed-host $(BUILD)/forksafe-test \
	$(BUILD)/net-test
tools: $(TOOLS)

HOST := $(CC) $(HOST_CFLAGS) -Iguest
TOOL_SRC := $(AN)/tool.c $(AN)/tool.h

$(BUILD)/rng-exposure: $(AN)/rng-exposure.c $(AN)/dump.c $(AN)/dump.h $(AN)/shape.h guest/protocol.h $(TOOL_SRC) | $(BUILD)
	$(HOST) -o $@ $(filter %.c,$^) -ljson-c

$(BUILD)/wg-detect: $(AN)/wg-detect.c $(AN)/wgpcap.c $(AN)/wgpcap.h $(TOOL_SRC) | $(BUILD)
	$(HOST) -o $@ $(filter %.c,$^) -lpcap -ljson-c

$(BUILD)/fork-report: $(AN)/fork-report.c $(AN)/shape.h guest/protocol.h $(TOOL_SRC) | $(BUILD)
	$(HOST) -o $@ $(filter %.c,$^) -ljson-c -lm

# The seed tool on the host, sanitized, for its self-test and its options;
# it never runs a command that touches the host's RNG.
$(BUILD)/forksafe-seed-host: guest/seed.c $(SEED_LIBS) | $(BUILD)
	$(HOST) -o $@ $(filter %.c,$^)

# libforksafe's own tests, sanitized, against a file laid out like the device.
$(BUILD)/forksafe-test: guest/forksafe_test.c guest/forksafe.c guest/sha256.c guest/forksafe.h guest/sha256.h guest/fake_vmgenid.h | $(BUILD)
	$(HOST) -o $@ $(filter %.c,$^)

# The agent's sink, sanitized, fed over loopback (guest/net_test.c).
$(BUILD)/net-test: guest/net_test.c guest/net.c guest/genid.c guest/net.h guest/genid.h guest/clock.h | $(BUILD)
	$(HOST) -pthread -o $@ $(filter %.c,$^)

# forksafe-openssl, the OpenSSL 3 provider (guest/openssl-provider.c): what
# guests install, and a sanitized build of it for its host tests.
PROVIDER_SRC := guest/openssl-provider.c guest/forksafe.c guest/sha256.c guest/forksafe.h guest/sha256.h
$(BUILD)/forksafe-openssl.so: $(PROVIDER_SRC) | $(BUILD)
	$(CC) -O2 $(WARN) -fPIC -shared -fvisibility=hidden -Wl,-z,defs -Iguest -o $@ $(filter %.c,$^) -lcrypto
$(BUILD)/forksafe-openssl-asan.so: $(PROVIDER_SRC) | $(BUILD)
	$(HOST) -fPIC -shared -Wl,-z,defs -o $@ $(filter %.c,$^) -lcrypto
$(BUILD)/forksafe-openssl-test: guest/openssl-provider_test.c guest/forksafe.h guest/fake_vmgenid.h guest/openssl_conf.h | $(BUILD)
	$(HOST) -o $@ $(filter %.c,$^) -lcrypto -lpthread
# Its cost per call, counted by valgrind (make bench-openssl): optimized, not sanitized.
$(BUILD)/forksafe-openssl-bench: guest/openssl-provider_bench.c guest/forksafe.h guest/fake_vmgenid.h guest/openssl_conf.h | $(BUILD)
	$(CC) -O2 $(WARN) -Iguest -o $@ $(filter %.c,$^) -lcrypto

$(BUILD)/pcap-synth: $(AN)/pcap-synth.c $(AN)/wgpcap.h $(TOOL_SRC) | $(BUILD)
	$(HOST) -o $@ $(filter %.c,$^)

$(BUILD)/qmp: qemu-scripts/qmp.c qemu-scripts/unixsock.c qemu-scripts/unixsock.h | $(BUILD)
	$(HOST) -o $@ $(filter %.c,$^) -ljson-c

$(BUILD)/agent-call: qemu-scripts/agent-call.c qemu-scripts/unixsock.c qemu-scripts/unixsock.h guest/protocol.h | $(BUILD)
	$(HOST) -o $@ $(filter %.c,$^)

$(BUILD):
	mkdir -p $@

# ---- fuzzing -------------------------------------------------------------------
# libFuzzer targets for the parsers of untrusted input: recorder dumps from
# the guest, lines off the QMP/agent sockets and captures of guests' wire.
# `make fuzz` runs each for FUZZ_SECONDS on a corpus under $(BUILD)/corpus/,
# seeded from $(AN)/corpus/ (see its README), and fails on any crash (the
# crashing input is left in $(BUILD)/crashes/).
FUZZ_CFLAGS := -g -O1 $(WARN) -Iguest -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_SECONDS ?= 20
FUZZ_RUN = -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -print_final_stats=1
CORPUS := $(BUILD)/corpus

$(BUILD)/fuzz-dump: $(AN)/fuzz-dump.c $(AN)/dump.c $(AN)/dump.h guest/protocol.h | $(BUILD)
	clang $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^)

$(BUILD)/fuzz-wg-detect: $(AN)/fuzz-wg-detect.c $(AN)/wgpcap.c $(AN)/wgpcap.h | $(BUILD)
	clang $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^) -lpcap

$(BUILD)/fuzz-read-line: qemu-scripts/fuzz-read-line.c qemu-scripts/unixsock.c qemu-scripts/unixsock.h | $(BUILD)
	clang $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^)

corpus: $(BUILD)/pcap-synth
	mkdir -p $(CORPUS)/dump $(CORPUS)/read-line $(CORPUS)/wg-detect $(BUILD)/crashes
	cp $(AN)/corpus/dump/* $(CORPUS)/dump/
	cp $(AN)/corpus/read-line/* $(CORPUS)/read-line/
	printf '%65536s' full >$(CORPUS)/read-line/seed-full-buffer
	for f in $(AN)/corpus/wg-detect/*.frames; do \
		$(BUILD)/pcap-synth $$f >$(CORPUS)/wg-detect/$$(basename $$f .frames).pcap || exit 1; \
	done

fuzz: $(BUILD)/fuzz-dump $(BUILD)/fuzz-read-line $(BUILD)/fuzz-wg-detect corpus
	$(BUILD)/fuzz-dump $(FUZZ_RUN) -artifact_prefix=$(BUILD)/crashes/dump- $(CORPUS)/dump
	$(BUILD)/fuzz-read-line $(FUZZ_RUN) -artifact_prefix=$(BUILD)/crashes/read-line- $(CORPUS)/read-line
	$(BUILD)/fuzz-wg-detect $(FUZZ_RUN) -artifact_prefix=$(BUILD)/crashes/wg-detect- $(CORPUS)/wg-detect

# ---- tests ---------------------------------------------------------------------
# TESTS="boot_vmgenid ..." runs a subset; KERNEL=/path/bzImage tests one kernel.
# Each phase is timed (snapshot-tests/drivers/check.sh); a scenario that skips fails.
check:
	@snapshot-tests/drivers/check.sh

# The main job: the full fork matrix for both kernels (METHODS=, VCPUS=,
# CLONES=, KERNEL= narrow or redirect it; results under results/).
METHODS ?=
VCPUS ?= 1 2
CLONES ?= 4
demo: deps
	@$(MAKE) --no-print-directory kernels guest tools
	@snapshot-tests/drivers/fork-matrix.sh --vcpus "$(VCPUS)" --clones "$(CLONES)" \
		$(if $(METHODS),--methods "$(METHODS)")

# Benchmarks print measured figures and patched/stock ratios from one run.
bench-rng: deps
	@$(MAKE) --no-print-directory kernel kernel-stock kernel-bench guest tools
	@snapshot-tests/drivers/bench-rng.sh

# The vDSO check is 6.12's alone (Linux 6.1 has no vDSO getrandom()).
bench-openssl: deps
	@$(MAKE) --no-print-directory $(BUILD)/forksafe-openssl-bench $(BUILD)/forksafe-openssl.so
	@snapshot-tests/drivers/bench-openssl.sh $(if $(CALLS),--calls "$(CALLS)")

bench-vdso: deps
	@kernel-patches/kernel.sh build stock-6.12
	@kernel-patches/kernel.sh build patched-6.12
	@$(MAKE) --no-print-directory guest tools
	@snapshot-tests/drivers/bench-vdso.sh

# Each mutation of kernel-patches/$(LINUX)/mutants/ must be killed by a test.
mutants: deps
	@$(MAKE) --no-print-directory kernel-kunit guest tools
	@LINUX=$(LINUX) snapshot-tests/drivers/mutants.sh

bench-wg: deps
	@$(MAKE) --no-print-directory kernels kernel-bench guest tools
	@snapshot-tests/drivers/bench-wg.sh

DEPTH ?= 100
storm: deps
	@$(MAKE) --no-print-directory kernels guest tools
	@snapshot-tests/drivers/storm.sh --depth "$(DEPTH)" $(if $(METHOD),--method "$(METHOD)") $(if $(WG),--wg)

PEERS ?= 1 10 50 200
wg-scale: deps
	@$(MAKE) --no-print-directory kernels guest tools
	@snapshot-tests/drivers/wg-scale.sh --peers "$(PEERS)" \
		--clones "$(if $(filter command line environment,$(origin CLONES)),$(CLONES),2)"

LIVE ?= 0 10 130
BEHIND ?= 1 60 3600
BOTH ?= 20
SCALE ?= 50
wg-deploy: deps
	@$(MAKE) --no-print-directory kernels guest tools
	@snapshot-tests/drivers/wg-deploy.sh --live "$(LIVE)" --behind "$(BEHIND)" --both "$(BOTH)" --scale "$(SCALE)" \
		--clones "$(if $(filter command line environment,$(origin CLONES)),$(CLONES),2)"

# CLONES here defaults to 16 clones at once.
crowd: deps
	@$(MAKE) --no-print-directory kernels guest tools
	@snapshot-tests/drivers/crowd.sh \
		--clones "$(if $(filter command line environment,$(origin CLONES)),$(CLONES),16)"

# CLONES here defaults to 3 boots per row (demo's 4 is for forks).
cold-clones: deps
	@$(MAKE) --no-print-directory kernels guest tools
	@snapshot-tests/drivers/cold-clones.sh \
		--clones "$(if $(filter command line environment,$(origin CLONES)),$(CLONES),3)" \
		$(if $(COLD_ROWS),--rows "$(COLD_ROWS)")

clean:
	rm -rf $(BUILD)
