namespace gcsim {
int sim_library_anchor = 0;
}
