# persistent calls (MPI_Allreduce_init & co., started and waited) across emulated nodes: issue59-nb.sh's runs in that form
exec bash "$(dirname "$0")/issue59-nb.sh" "$1" "$2" persistent
