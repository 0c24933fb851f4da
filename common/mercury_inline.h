/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * MERCURY_INLINE: how the common/ headers declare their functions. On BPF they must be inlined
 * (no calls to subprograms on the hot paths, and the verifier sees the caller's bounds); in
 * user space plain static inline.
 */
#ifndef MERCURY_INLINE_H
#define MERCURY_INLINE_H

#ifdef __VMLINUX_H__
#define MERCURY_INLINE static __always_inline
#else
#define MERCURY_INLINE static inline
#endif

#endif
