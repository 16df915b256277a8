// javac's answer for call sites: which declaration each called name means.
//
//   java JavaCallees.java ROOT MODULE SITES.tsv > LABELS.tsv
//
// Every .java file under ROOT (module-info.java aside) is parsed and attributed in one JavacTask;
// MODULE, when not "-", is the JDK module those sources are (`--patch-module MODULE=ROOT`), so
// that the module's own sources answer for it. SITES.tsv: one `path<TAB>line<TAB>col<TAB>name`
// a line (line 1-based, col 0-based). For each, the method invocation or `new` whose name starts
// there is looked up with Trees.getElement: "internal<TAB>path<TAB>line" when the method,
// constructor or class is declared in a source under ROOT (an implicit constructor: its class),
// "external" when it comes from a class file (the JDK, a dependency), "unknown" when javac has no
// element there.
import com.sun.source.tree.ClassTree;
import com.sun.source.tree.CompilationUnitTree;
import com.sun.source.tree.IdentifierTree;
import com.sun.source.tree.MemberSelectTree;
import com.sun.source.tree.MethodInvocationTree;
import com.sun.source.tree.MethodTree;
import com.sun.source.tree.NewClassTree;
import com.sun.source.tree.ParameterizedTypeTree;
import com.sun.source.tree.Tree;
import com.sun.source.util.JavacTask;
import com.sun.source.util.SourcePositions;
import com.sun.source.util.TreePath;
import com.sun.source.util.TreePathScanner;
import com.sun.source.util.Trees;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import javax.lang.model.element.Element;
import javax.lang.model.element.ElementKind;
import javax.lang.model.element.NestingKind;
import javax.lang.model.element.TypeElement;
import javax.lang.model.type.DeclaredType;
import javax.lang.model.type.TypeMirror;
import javax.tools.JavaCompiler;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;

public class JavaCallees {
    public static void main(String[] args) throws Exception {
        Path root = Path.of(args[0]).toAbsolutePath().normalize();
        String module = args[1];
        List<String> sites = Files.readAllLines(Path.of(args[2]));
        List<Path> files;
        try (Stream<Path> walk = Files.walk(root)) {
            files = walk.filter(p -> p.toString().endsWith(".java"))
                    .filter(p -> !p.getFileName().toString().equals("module-info.java"))
                    .toList();
        }
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        StandardJavaFileManager fm = javac.getStandardFileManager(null, null, StandardCharsets.UTF_8);
        List<String> options = new ArrayList<>(List.of("-proc:none", "-Xlint:none", "-nowarn"));
        if (!module.equals("-")) {
            options.addAll(List.of("--patch-module", module + "=" + root));
        }
        JavacTask task = (JavacTask) javac.getTask(
                null, fm, d -> {}, options, null, fm.getJavaFileObjectsFromPaths(files));
        Iterable<? extends CompilationUnitTree> units = task.parse();
        task.analyze();
        Trees trees = Trees.instance(task);
        SourcePositions positions = trees.getSourcePositions();
        Map<String, CompilationUnitTree> byPath = new HashMap<>();
        for (CompilationUnitTree unit : units) {
            Path p = Path.of(unit.getSourceFile().toUri()).toAbsolutePath().normalize();
            byPath.put(root.relativize(p).toString().replace('\\', '/'), unit);
        }
        StringBuilder out = new StringBuilder();
        for (String line : sites) {
            if (line.isBlank()) continue;
            String[] f = line.split("\t");
            out.append(label(trees, positions, root, byPath.get(f[0]), Integer.parseInt(f[1]),
                    Integer.parseInt(f[2]), f[3])).append('\n');
        }
        System.out.print(out);
    }

    static String label(Trees trees, SourcePositions positions, Path root, CompilationUnitTree unit,
            int line, int col, String name) {
        if (unit == null) return "unknown";
        long pos = unit.getLineMap().getPosition(line, col + 1);
        TreePath[] found = new TreePath[1];
        new TreePathScanner<Void, Void>() {
            @Override
            public Void visitMethodInvocation(MethodInvocationTree t, Void v) {
                if (found[0] == null && nameStarts(t.getMethodSelect()) == pos) {
                    found[0] = new TreePath(getCurrentPath(), t.getMethodSelect());
                }
                return super.visitMethodInvocation(t, v);
            }

            @Override
            public Void visitNewClass(NewClassTree t, Void v) {
                Tree id = t.getIdentifier();
                if (id instanceof ParameterizedTypeTree pt) id = pt.getType();
                if (found[0] == null && nameStarts(id) == pos) found[0] = getCurrentPath();
                return super.visitNewClass(t, v);
            }

            long nameStarts(Tree t) {
                if (t instanceof IdentifierTree i) return positions.getStartPosition(unit, t);
                if (t instanceof MemberSelectTree m) {
                    return positions.getEndPosition(unit, t) - m.getIdentifier().length();
                }
                return -1;
            }
        }.scan(unit, null);
        if (found[0] == null) return "unknown";
        Element e = trees.getElement(found[0]);
        if (e == null || e.asType().getKind() == javax.lang.model.type.TypeKind.ERROR) return "unknown";
        if (e.getKind() == ElementKind.CONSTRUCTOR
                && e.getEnclosingElement() instanceof TypeElement anon
                && anon.getNestingKind() == NestingKind.ANONYMOUS) {
            // `new Base() {…}`: what is called is Base's (its class, or the interface implemented)
            TypeMirror base = anon.getInterfaces().isEmpty() ? anon.getSuperclass() : anon.getInterfaces().get(0);
            e = base instanceof DeclaredType dt ? dt.asElement() : null;
            if (e == null) return "unknown";
        }
        TreePath decl = trees.getPath(e);
        if (decl == null && e.getKind() == ElementKind.CONSTRUCTOR) decl = trees.getPath(e.getEnclosingElement());
        if (decl == null) return "external";
        Path file = Path.of(decl.getCompilationUnit().getSourceFile().toUri()).toAbsolutePath().normalize();
        if (!file.startsWith(root)) return "external";
        // the line of the declaration's name, past its annotations and comments
        CompilationUnitTree where = decl.getCompilationUnit();
        long start = positions.getStartPosition(where, decl.getLeaf());
        Tree leaf = decl.getLeaf();
        if (leaf instanceof MethodTree mt && mt.getReturnType() != null) {
            start = positions.getStartPosition(where, mt.getReturnType());
        } else if (leaf instanceof MethodTree || leaf instanceof ClassTree) {
            long modifiersEnd = positions.getEndPosition(where, leaf instanceof MethodTree m ? m.getModifiers() : ((ClassTree) leaf).getModifiers());
            if (modifiersEnd > start) start = modifiersEnd;
        }
        String declared = leaf instanceof MethodTree m ? m.getName().toString()
                : leaf instanceof ClassTree c ? c.getSimpleName().toString() : "";
        if (declared.equals("<init>")) declared = e.getEnclosingElement().getSimpleName().toString();
        try {
            int at0 = declared.isEmpty() ? -1 : where.getSourceFile().getCharContent(true).toString().indexOf(declared, (int) start);
            if (at0 >= 0) start = at0;
        } catch (java.io.IOException ignored) {
            // the start of the declaration is near enough
        }
        long at = where.getLineMap().getLineNumber(start);
        return "internal\t" + root.relativize(file).toString().replace('\\', '/') + "\t" + at;
    }
}
