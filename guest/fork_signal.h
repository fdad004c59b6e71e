/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FORKSAFE_FORK_SIGNAL_H
#define FORKSAFE_FORK_SIGNAL_H
#include <stdint.h>

/* What /dev/vmgenid did with each use: 0 success, else the errno. */
struct signal_probe {
	uint64_t generation;
	uint32_t id_offset;
	int short_read;		/* read() of 8 bytes: EINVAL */
	int rw_open;		/* open(O_RDWR) by root: 0 (else nothing below ran) */
	int map_private_write;	/* PROT_WRITE, MAP_PRIVATE: EPERM */
	int map_exec;		/* PROT_EXEC: EPERM */
	int map_offset;		/* offset one page: EINVAL */
	/* On the O_RDWR file, where the VFS leaves the answer to the driver: */
	int write;		/* write(): EINVAL (no .write) */
	int map_shared_write;	/* PROT_WRITE, MAP_SHARED: EPERM */
	int map_read;		/* the one page, PROT_READ, MAP_SHARED: 0 */
	int mprotect_write;	/* of that read-only mapping: EACCES (VM_MAYWRITE gone) */
	int mprotect_exec;	/* EACCES (VM_MAYEXEC gone) */
	int id_matches;		/* the mapping holds the ID /dev/mem shows */
};

/* 0, or -errno when /dev/vmgenid cannot be opened or read. */
int signal_probe(struct signal_probe *p);

/*
 * Threads that poll /dev/vmgenid and count its wakes, and that count the
 * uevents that carry VMGENID_GENERATION=.
 */
int signal_watch_start(void);
int signal_watch_status(unsigned int *wakes, unsigned int *uevents, uint64_t *generation);

/*
 * The ID's page as the agent's own mappings see it: /dev/vmgenid's, mapped
 * once by start and kept across unbinds, and x86's vvar vmgenid_page (6.12
 * series).  A read's minor faults tell whether the kernel dropped the
 * entry since the last read (1) or kept it (0); the ID is what it held.
 */
struct signal_maps {
	int vvar;			/* the vvar area has vmgenid_page */
	long dev_faults, vvar_faults;
	long child_vvar_faults;		/* in a child forked after a read */
	char dev_id[37], vvar_id[37];
};

int signal_maps_start(void);
int signal_maps_status(struct signal_maps *m);

#endif
