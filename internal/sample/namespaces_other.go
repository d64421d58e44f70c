//go:build !linux

package sample

// Namespaces is unsupported off Linux: every fact is unknown with reason
// ReasonUnsupported.
func Namespaces(pid int) NamespaceSet {
	var n NamespaceSet
	for i := range n.Reason {
		n.Reason[i] = ReasonUnsupported
	}
	n.NSpidReason = ReasonUnsupported
	return n
}

// ContainerOf is unsupported off Linux: Runtime RuntimeUnknown, Reason
// ReasonUnsupported.
func ContainerOf(pid int) Container {
	return Container{Runtime: RuntimeUnknown, Reason: ReasonUnsupported}
}

// FactsOf is Namespaces and ContainerOf together (unsupported off Linux).
func FactsOf(pid int) *Facts {
	return &Facts{Namespaces: Namespaces(pid), Container: ContainerOf(pid)}
}
