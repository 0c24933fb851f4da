/* SPDX-License-Identifier: BSD-2-Clause */
/* The release, one place for mercuryd -V, mercury-ps --version, mercury.pc and the .deb. */
#ifndef MERCURY_VERSION_H
#define MERCURY_VERSION_H

#define MERCURY_VERSION "0.2.0"

#endif
