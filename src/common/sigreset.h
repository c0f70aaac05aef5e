/* What a new process starts from before it execs: every signal at its
 * default disposition, none blocked. Only system calls: safe in a vfork
 * (CLONE_VM) child that runs on its parent's memory. */
#ifndef OSB_COMMON_SIGRESET_H
#define OSB_COMMON_SIGRESET_H

void osb_signals_default(void);
#endif
