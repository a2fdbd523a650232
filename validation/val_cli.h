/* val_cli.h — the `trainsim validate` subcommand (dispatched from sim/cli.c). */
#ifndef VAL_CLI_H
#define VAL_CLI_H

/* argv[1] is "validate".  Prints, returns the exit status. */
int val_cli_main(int argc, char **argv);

#endif
