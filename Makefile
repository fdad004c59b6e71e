# forksafe: VM-fork safety for the Linux RNG and WireGuard, proven in QEMU.
#
#   make demo       the fork matrix for both kernels (the main job)
#   make check      build everything and run snapshot-tests/ (KTAP)
#   make deps       install what the suite needs from Debian's packages
#   make kernel / kernel-stock / kernel-debug / kernel-tree / refresh-patches
#   make guest      static init + agent, packed into an initramfs
#   make tools      the host-side C tools (QMP client, agent client, analyzers)

BUILD ?= $(CURDIR)/build
export FORKSAFE_BUILD := $(BUILD)

WARN := -Wall -Wextra -Werror -std=gnu11
CC ?= cc
GUEST_CFLAGS := -O2 -static $(WARN)
# The host tools read what guests and QEMU send them: always sanitized.
HOST_CFLAGS := -O1 -g $(WARN) -fsanitize=address,undefined -fno-sanitize-recover=all

DEBS := linux-source-6.1 bc bison flex libelf-dev libssl-dev cpio xz-utils file \
	gcc make clang libclang-rt-14-dev \
	qemu-system-x86 qemu-utils vde2 wireguard-tools busybox-static \
	libvirt-daemon-system libvirt-clients libvirt-dev \
	libjson-c-dev libpcap-dev jq shellcheck python3-ply python3-git

.PHONY: all deps kernel kernel-stock kernel-debug kernel-bench kernel-tree refresh-patches \
	checkpatch guest tools check demo bench-rng bench-wg fuzz clean

all: kernel kernel-stock guest tools

# Idempotent: asks dpkg first and runs apt-get only for what is missing.
deps:
	@missing=""; for p in $(DEBS); do \
		dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "deps: installing$$missing"; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		  apt-get install -y -qq --no-install-recommends $$missing >/dev/null; } || \
		{ echo "deps: apt-get install failed for$$missing" >&2; exit 1; }; \
	fi; \
	getent group libvirt-qemu >/dev/null || groupadd --system libvirt-qemu; \
	getent passwd libvirt-qemu >/dev/null || \
		useradd --system -g libvirt-qemu -M -d /var/lib/libvirt -s /usr/sbin/nologin libvirt-qemu

# ---- kernels (cached by input hash outside the clone) --------------------------
kernel:
	@kernel-patches/kernel.sh build patched
kernel-stock:
	@kernel-patches/kernel.sh build stock
kernel-debug:
	@kernel-patches/kernel.sh build debug
kernel-bench:
	@kernel-patches/kernel.sh build stock-bench
	@kernel-patches/kernel.sh build patched-bench
kernel-tree:
	@kernel-patches/kernel.sh tree
refresh-patches:
	@kernel-patches/kernel.sh refresh
checkpatch:
	@kernel-patches/kernel.sh checkpatch

# ---- guest userspace -----------------------------------------------------------
guest: $(BUILD)/initramfs.cpio

$(BUILD)/init: guest/init.c | $(BUILD)
	$(CC) $(GUEST_CFLAGS) -o $@ $^

AGENT_SRC := guest/agent.c guest/genid.c guest/recorder.c guest/bench.c guest/net.c
$(BUILD)/forksafe-agent: $(AGENT_SRC) guest/genid.h guest/recorder.h guest/bench.h guest/net.h | $(BUILD)
	$(CC) $(GUEST_CFLAGS) -pthread -o $@ $(filter %.c,$^)

$(BUILD)/initramfs.cpio: $(BUILD)/init $(BUILD)/forksafe-agent guest/build-initramfs.sh
	guest/build-initramfs.sh $@ $(BUILD)/init $(BUILD)/forksafe-agent

# ---- host tools ----------------------------------------------------------------
TOOLS := $(BUILD)/qmp $(BUILD)/agent-call $(BUILD)/rng-exposure $(BUILD)/matrix-report \
	$(BUILD)/wg-detect
tools: $(TOOLS)

AN := snapshot-tests/analyzers
$(BUILD)/rng-exposure: $(AN)/rng-exposure.c $(AN)/dump.c $(AN)/dump.h | $(BUILD)
	$(CC) $(HOST_CFLAGS) -o $@ $(filter %.c,$^) -ljson-c

$(BUILD)/wg-detect: $(AN)/wg-detect.c $(AN)/wgpcap.c $(AN)/wgpcap.h | $(BUILD)
	$(CC) $(HOST_CFLAGS) -o $@ $(filter %.c,$^) -lpcap -ljson-c

$(BUILD)/matrix-report: $(AN)/matrix-report.c | $(BUILD)
	$(CC) $(HOST_CFLAGS) -o $@ $(filter %.c,$^) -ljson-c

$(BUILD)/qmp: qemu-scripts/qmp.c qemu-scripts/unixsock.c qemu-scripts/unixsock.h | $(BUILD)
	$(CC) $(HOST_CFLAGS) -o $@ $(filter %.c,$^) -ljson-c

$(BUILD)/agent-call: qemu-scripts/agent-call.c qemu-scripts/unixsock.c qemu-scripts/unixsock.h | $(BUILD)
	$(CC) $(HOST_CFLAGS) -o $@ $(filter %.c,$^)

$(BUILD):
	mkdir -p $@

# ---- fuzzing -------------------------------------------------------------------
# libFuzzer targets for the parsers of untrusted input: recorder dumps from
# the guest and lines off the QMP/agent sockets.  `make fuzz` runs each for
# FUZZ_SECONDS on a corpus under $(BUILD)/corpus/ and fails on any crash
# (the crashing input is left in $(BUILD)/crashes/).
FUZZ_CFLAGS := -g -O1 $(WARN) -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_SECONDS ?= 20
FUZZ_RUN = -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -print_final_stats=1

$(BUILD)/fuzz-dump: $(AN)/fuzz-dump.c $(AN)/dump.c $(AN)/dump.h | $(BUILD)
	clang $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^)

$(BUILD)/fuzz-wg-detect: $(AN)/fuzz-wg-detect.c $(AN)/wgpcap.c $(AN)/wgpcap.h | $(BUILD)
	clang $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^) -lpcap

# Two seed captures for fuzz-wg-detect: the VM (port 51820) as initiator and
# as responder, with a pre-fork data stream before each handshake.
WG_SEEDS := import struct,sys; P=struct.pack; \
	fr=lambda s,d,m: bytes(12)+P("!H",2048)+P("!BBHHHBBH4s4s",69,0,28+len(m),0,0,64,17,0,bytes([10,0,0,2]),bytes([10,0,0,1]))+P("!HHHH",s,d,8+len(m),0)+m; \
	S=lambda m: fr(51820,51821,m); V=lambda m: fr(51821,51820,m); \
	I=lambda s: P("<BxxxI",1,s)+bytes(140); R=lambda s,r: P("<BxxxII",2,s,r)+bytes(80); \
	D=lambda r,c,n: P("<BxxxIQ",4,r,c)+bytes([n])*32; hb=fr(40000,9,bytes(8)); \
	cap=lambda fs: P("<IHHiIII",0xa1b2c3d4,2,4,0,0,65536,1)+b"".join(P("<IIII",1,100*i,len(f),len(f))+f for i,f in enumerate(fs)); \
	open(sys.argv[1]+"/seed-initiator.pcap","wb").write(cap([hb,S(D(7,100,1)),S(I(5)),V(R(9,5)),S(D(9,0,2)),V(D(3,0,3)),S(D(7,101,1))])); \
	open(sys.argv[1]+"/seed-responder.pcap","wb").write(cap([hb,S(D(7,100,4)),V(I(6)),S(R(8,6)),S(D(6,0,5)),V(fr(1,2,bytes(3))),S(D(7,102,6))]))

$(BUILD)/fuzz-read-line: qemu-scripts/fuzz-read-line.c qemu-scripts/unixsock.c qemu-scripts/unixsock.h | $(BUILD)
	clang $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^)

fuzz: $(BUILD)/fuzz-dump $(BUILD)/fuzz-read-line $(BUILD)/fuzz-wg-detect
	mkdir -p $(BUILD)/corpus/dump $(BUILD)/corpus/read-line $(BUILD)/corpus/wg-detect $(BUILD)/crashes
	python3 -c '$(WG_SEEDS)' $(BUILD)/corpus/wg-detect
	printf 'R 0 0 00000000000000ff 123 0\nR 0 1 0000000000000001 456 1\n' >$(BUILD)/corpus/dump/seed-1cpu
	printf 'R 0 0 ff 10 0\nR 1 0 a 20 1\nR 0 1 0 30 0\n' >$(BUILD)/corpus/dump/seed-2cpu
	{ printf 'R %d 0 0 0 0\n' $$(seq 0 63); printf 'R 63 1 0 0 0\n'; } >$(BUILD)/corpus/dump/seed-64cpu
	printf '{"QMP": {"version": {}}}\r\n{"return": {}}\n' >$(BUILD)/corpus/read-line/seed-qmp
	printf 'ok 1\n\nno newline at the end' >$(BUILD)/corpus/read-line/seed-cut
	printf '%5000s\nshort\n' long >$(BUILD)/corpus/read-line/seed-long-line
	printf '%65536s' full >$(BUILD)/corpus/read-line/seed-full-buffer
	$(BUILD)/fuzz-dump $(FUZZ_RUN) -artifact_prefix=$(BUILD)/crashes/dump- $(BUILD)/corpus/dump
	$(BUILD)/fuzz-read-line $(FUZZ_RUN) -artifact_prefix=$(BUILD)/crashes/read-line- $(BUILD)/corpus/read-line
	$(BUILD)/fuzz-wg-detect $(FUZZ_RUN) -artifact_prefix=$(BUILD)/crashes/wg-detect- $(BUILD)/corpus/wg-detect

# ---- tests ---------------------------------------------------------------------
# TESTS="boot_vmgenid ..." runs a subset; KERNEL=/path/bzImage tests one kernel.
check: deps
	@$(MAKE) --no-print-directory kernel kernel-stock kernel-debug guest tools
	@snapshot-tests/run.sh

# The main job: the full fork matrix for both kernels (METHODS=, VCPUS=,
# CLONES=, KERNEL= narrow or redirect it; results under results/).
METHODS ?=
VCPUS ?= 1 2
CLONES ?= 4
demo: deps
	@$(MAKE) --no-print-directory kernel kernel-stock guest tools
	@snapshot-tests/fork-matrix.sh --vcpus "$(VCPUS)" --clones "$(CLONES)" \
		$(if $(METHODS),--methods "$(METHODS)")

# Benchmarks print measured figures and patched/stock ratios from one run.
bench-rng: deps
	@$(MAKE) --no-print-directory kernel kernel-stock kernel-bench guest tools
	@snapshot-tests/bench-rng.sh

bench-wg: deps
	@$(MAKE) --no-print-directory kernel kernel-stock guest tools
	@snapshot-tests/bench-wg.sh

clean:
	rm -rf $(BUILD)
