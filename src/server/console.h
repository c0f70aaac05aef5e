/* The web console's assets (console/src and the pinned npm packages,
 * bundled by scripts/build-console.sh and embedded at build time by
 * scripts/embed.sh); api_console.c serves them at /console. */
#ifndef OSB_SRV_CONSOLE_H
#define OSB_SRV_CONSOLE_H
#include <stddef.h>

extern const unsigned char osb_console_index_html[], osb_console_app_js[], osb_console_app_css[],
    osb_console_vendor_js[], osb_console_vendor_css[];
extern const size_t osb_console_index_html_len, osb_console_app_js_len, osb_console_app_css_len,
    osb_console_vendor_js_len, osb_console_vendor_css_len;
#endif
