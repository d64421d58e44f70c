package host

// graphTools declares the graph workspace tools (get_graphs, add_graphs,
// export_graphs). Not built yet: the list is empty, so no graph tool is
// published or registered.
func graphTools() []Decl { return nil }
