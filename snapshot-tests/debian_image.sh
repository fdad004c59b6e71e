#!/bin/bash
# A real Debian 12 guest: the image of make image (guest/build-image.sh:
# mmdebstrap, systemd as PID 1, Debian's generic 6.1 kernel and its own
# initramfs, the agent installed from its Debian package as a systemd
# service), read as an operator's IMAGE= is (qemu-scripts/image.sh: the
# kernel, initramfs and root= from inside the disk) and cloned as an
# operator clones a golden image:
#  - it boots to the agent under systemd: PID 1 is systemd and started the
#    agent, the vmgenid driver is bound, and the agent's poweroff powers
#    the VM off (the package works as an operator installs it);
#  - a migrate-file fork of a TLS server: `openssl s_server` (TLS 1.3,
#    Debian's OpenSSL), started before the snapshot, each record one
#    handshake begun with the same fixed ClientHello (shape
#    openssl-tls-16: the server's random and x25519 share), on the disk
#    booted with the patched kernel (patched@debian-image: systemd and
#    the agent's service under the series), one fresh-GUID clone (two in
#    the row that must be fork-safe), each on a copy of the original's
#    root disk as the RAM was saved: the control stays identical to its
#    reference, every clone sees a new GUID and its kernel reseeds once,
#    yet every clone's server answers with the reference's random and
#    key share (Ristenpart and Yilek's attack of 2010, on Debian 12):
#    user-space state a fork copies, which no kernel reaches and the
#    detector must flag (its positive control).  make demo's rows draw
#    from OpenSSL's DRBGs directly too (RAND_bytes, RAND_priv_bytes,
#    70,000 calls, past OpenSSL's own reseed interval of 65,536);
#  - the same fork with forksafe-openssl, the image's package, as
#    OpenSSL's DRBG (OPENSSL_CONF=/etc/forksafe/openssl.cnf, which
#    s_server inherits; shape openssl-fs-tls-16): every clone parts from
#    the reference and nothing is shared after its GUID changed (the
#    provider checks the ID /dev/vmgenid maps before every output).  The
#    image's own kernel (no /dev/vmgenid: the provider cannot help,
#    stock Linux's race) and getrandom() loops are make demo's rows
#    (KERNELS=debian-image), as is the fork of systemd's random seed
#    (systemd-random-seed save, as a clone's shutdown runs it: shape
#    systemd-seed), which make check ran here until 2026-12-07 and gave
#    up for its hour (docs/results.md has the rows).
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

progress "debian_image: the image (built once, then cached)"
"$FORKSAFE_ROOT/guest/build-image.sh" "$BUILD/image" "$BUILD" \
	>"$RUN_DIR/image.log" 2>&1 ||
	die "debian_image: no image: $(tail -n 1 "$RUN_DIR/image.log")"
require_kernels debian_image debian-image patched@debian-image
kernel=$(kernel_path debian-image)
# systemd under TCG: about 25 s to the agent here.
export BOOT_TIMEOUT=300

t_plan 11
if guest_boot img "$kernel"; then
	t_ok "the image boots to its agent"
	info=$(guest_call img info)
	t_eq "PID 1 is systemd" "$(agent_field init <<<"$info")" systemd
	t_eq "systemd started the agent (its service)" "$(agent_field parent <<<"$info")" systemd
	t_eq "the vmgenid driver is bound" "$(agent_field vmgenid_driver <<<"$info")" bound
	guest_call img poweroff >/dev/null
	rc=0
	guest_wait_exit img "$POWEROFF_TIMEOUT" || rc=$?
	t_result "$rc" "the agent's poweroff powers the VM off (within ${POWEROFF_TIMEOUT}s)"
	guest_quit img
else
	t_fail "the image boots to its agent"
	t_fail "PID 1 is systemd"
	t_fail "systemd started the agent (its service)"
	t_fail "the vmgenid driver is bound"
	t_fail "the agent's poweroff powers the VM off"
fi

# The TLS rows record TLS_RECORDS handshakes after 40 s of uptime (as
# every image guest): OpenSSL's DRBGs draw nothing from the kernel between
# their own reseeds, so the kernel's timed reseeds, which the library
# shapes' longer age (LIBRARY_UPTIME_S) keeps out of their longer
# recordings, cannot part a control here.
ROWS=()
# (Exported: each row runs in a shell of its own, which reads it.)
export LIBRARY_UPTIME_S=${IMAGE_LIBRARY_UPTIME_S:-40}
# The positive control (a window that must be there) takes one fresh
# clone, the row that must be fork-safe two: a restore of this image is
# about 20 s, and make check must stay under an hour.
declare -A fresh=([openssl-tls-16]=1 [openssl-fs-tls-16]=2)
rng_rows "$RUN_DIR" "${fresh[openssl-tls-16]}" patched@debian-image 1 migrate-file openssl-tls-16 ready
rng_rows "$RUN_DIR" "${fresh[openssl-fs-tls-16]}" patched@debian-image 1 migrate-file openssl-fs-tls-16 ready
rows_judge "${ROWS[@]}"
# shellcheck disable=SC2034 # v and t_row read VERDICT
for VERDICT in "${ROW_VERDICTS[@]}"; do
	tag="$(v kernel) migrate-file $(v shape)" n=${fresh[$(v shape)]}
	if ! t_row "$tag: measured with an identical negative control"; then
		t_fail "$tag: every clone sees a new GUID and reseeds once"
		t_fail "$tag: as expected"
		continue
	fi
	t_eq "$tag: every clone sees a new GUID and reseeds once" "$(v guid_changed) $(v reseeded_once)" "$n $n"
	t_diag "$tag: $(v verdict); at most $(v exposure_bytes_max) bytes, $(v exposure_us_max) us shared with the reference"
	case "$(v kernel) $(v shape)" in
	*" openssl-fs-tls-16") t_eq "$tag: with forksafe-openssl every clone's server parts, nothing shared after the GUID changed" \
		"$(v diverged) $(v verdict)" "$n fork-safe" ;;
	*) t_eq "$tag: no clone's server parts from the reference's random and key share (positive control)" \
		"$(v diverged) $(v verdict)" "0 exposure window" ;;
	esac
done
t_done
