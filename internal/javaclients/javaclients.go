// Package javaclients compiles and runs Java programs against Debian's
// Curator 5.4 (libcurator-recipes-java): the clients tests' Curator contender
// and the herd experiment's Curator driver share it.
package javaclients

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// Where the Java tools and Curator come from: Debian's packages.
const (
	Java  = "/usr/bin/java"
	Javac = "/usr/bin/javac"
	// CuratorJars is the class path of Curator: the manifests of these jars
	// name the rest (curator-framework, curator-client, zookeeper, …).
	CuratorJars = "/usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar"
	// InstallHint says how to get what is missing.
	InstallHint = "install Debian's default-jdk-headless and libcurator-recipes-java (make clientdeps)"
)

// JVMFlags make a short-lived client JVM start quickly.
var JVMFlags = []string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.net.preferIPv4Stack=true"}

// Check reports the first of javac, java and Curator's jars that is missing,
// with what to install.
func Check() error {
	files := append([]string{Javac, Java}, strings.Split(CuratorJars, ":")...)
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%s missing: %s", f, InstallHint)
		}
	}
	return nil
}

// Compile compiles the Java sources against Curator into dir, and returns
// the class path to run them with.
func Compile(ctx context.Context, dir string, sources ...string) (string, error) {
	if err := Check(); err != nil {
		return "", err
	}
	args := append([]string{"-J-XX:TieredStopAtLevel=1", "-nowarn", "-d", dir, "-cp", CuratorJars}, sources...)
	out, err := exec.CommandContext(ctx, Javac, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("javac %s: %w\n%s", strings.Join(sources, " "), err, out)
	}
	return dir + ":" + CuratorJars, nil
}

// Command returns the JVM running class from classPath with args; jvm are
// flags beside JVMFlags (a heap size, say).
func Command(ctx context.Context, classPath, class string, jvm []string, args ...string) *exec.Cmd {
	flags := append(append(slices.Clone(JVMFlags), jvm...), "-cp", classPath, class)
	return exec.CommandContext(ctx, Java, append(flags, args...)...)
}
