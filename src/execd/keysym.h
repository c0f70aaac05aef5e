/* X keysyms for the computer-use keyboard: key names ("enter", "ctrl",
 * "f5"), single characters and text. Latin-1 characters are their own
 * keysym; every other Unicode character is 0x01000000 + its code point, the
 * form X clients (Xlib, xkbcommon) translate back to the character. */
#ifndef OSB_EXECD_KEYSYM_H
#define OSB_EXECD_KEYSYM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OSB_XK_SHIFT_L 0xffe1
#define OSB_XK_CONTROL_L 0xffe3
#define OSB_XK_META_L 0xffe7
#define OSB_XK_ALT_L 0xffe9
#define OSB_XK_SUPER_L 0xffeb

/* The keysym that types code point cp: newline is Return, tab is Tab;
 * 0 for other control characters. */
uint32_t osb_keysym_for_codepoint(uint32_t cp);
/* A key name (case-insensitive) or one UTF-8 character; 0 if unknown.
 * *modifier tells whether it is ctrl/shift/alt/super/meta. */
uint32_t osb_keysym_for_name(const char *name, bool *modifier);
/* Decodes one UTF-8 character at *s (advancing it); -1 on a malformed or
 * overlong sequence, a surrogate or a value past U+10FFFF. */
int osb_utf8_next(const char **s, const char *end, uint32_t *cp);
#endif
