/* The page zeroth serve sends for "/": one self-contained HTML file (CSS
 * and JavaScript inline, no outside resources), src/serve/page.html,
 * compiled into the binary by CMake (scripts/embed.cmake). Static data. */
#ifndef ZT_SERVE_PAGE_H
#define ZT_SERVE_PAGE_H

#include <stddef.h>

extern const char *const zt_serve_page; /* NUL-terminated */
extern const size_t zt_serve_page_size; /* bytes before the NUL */

#endif
