/*
 * fake_libsystemd.c - a libsystemd.so.0 without sd_notify, sd_listen_fds
 * or sd_watchdog_enabled: test_hardening puts it first on a daemon's
 * LD_LIBRARY_PATH, with NOTIFY_SOCKET set, to see the daemon refuse to
 * start with the reason rather than serve without telling its service
 * manager it is ready.
 */
int vxt_fake_libsystemd(void);
int vxt_fake_libsystemd(void) { return 0; }
