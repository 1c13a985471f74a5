#ifndef C_CHILD_PROCESS_H
#define C_CHILD_PROCESS_H

#include <spawn.h>

/// glibc's GNU extensions that ChildProcess needs, which Swift's Glibc module
/// does not import (it is built without _GNU_SOURCE).

/// pipe2(fds, O_CLOEXEC): a pipe whose ends no other child inherits.
int c_child_process_pipe(int fds[2]);

/// posix_spawn_file_actions_addclosefrom_np (glibc 2.34): close every
/// descriptor from `from` up in the child.
int c_child_process_addclosefrom(posix_spawn_file_actions_t *actions, int from);

/// posix_spawn_file_actions_addchdir_np (glibc 2.29): the child's working directory.
int c_child_process_addchdir(posix_spawn_file_actions_t *actions, const char *path);

#endif
